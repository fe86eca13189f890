// The dashboard's pages: each page's <body data-page> names its setup
// function below.
import { APIError, SIGNIN, call, load } from "./api.js";

const pages = { signin, overview };

// signin wires the admin API key form: the key goes once in the
// Authorization header of POST /auth/login-key, which sets the session
// cookie. The handle form is a plain GET to /auth/login.
function signin() {
  const form = document.getElementById("signin-key");
  const input = document.getElementById("key");
  const error = document.getElementById("key-error");
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    error.hidden = true;
    input.removeAttribute("aria-invalid");
    const key = input.value.trim();
    try {
      await call("POST", "/auth/login-key", { headers: { Authorization: `Bearer ${key}` } });
      input.value = "";
      window.location.assign("/dashboard/");
    } catch (err) {
      error.textContent = err.message;
      error.hidden = false;
      input.setAttribute("aria-invalid", "true");
      input.focus();
    }
  });
}

// signout wires the layout's sign-out button.
function signout() {
  const form = document.getElementById("signout");
  if (!form) return;
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      await call("POST", "/auth/logout");
    } finally {
      window.location.assign(SIGNIN);
    }
  });
}

// denied shows why a page's data is unavailable: the permission the page
// needs when the admin API answered 403, else the API's error.
function denied(err, permission) {
  const el = document.getElementById("denied");
  el.textContent =
    err instanceof APIError && err.status === 403
      ? `Your account lacks the ${permission} permission this page needs (the admin API answered: ${err.message}).`
      : `The data could not be loaded: ${err.message}`;
  el.hidden = false;
}

// overview shows GET /admin/stats: totals and records by collection.
async function overview() {
  const status = document.getElementById("status");
  let stats;
  try {
    stats = await load("/admin/stats");
  } catch (err) {
    status.hidden = true;
    denied(err, "stats:read");
    return;
  }
  const fmt = new Intl.NumberFormat();
  document.getElementById("total-records").textContent = fmt.format(stats.total_records);
  document.getElementById("lexicon-count").textContent = fmt.format(stats.lexicons);
  document.getElementById("record-collections").textContent = fmt.format(stats.record_collections);
  const collections = stats.collections || [];
  const table = document.getElementById("collections");
  const body = table.tBodies[0];
  body.replaceChildren(
    ...collections.map((c) => {
      const tr = document.createElement("tr");
      const name = document.createElement("td");
      name.textContent = c.collection;
      const count = document.createElement("td");
      count.className = "num";
      count.textContent = fmt.format(c.count);
      tr.append(name, count);
      return tr;
    }),
  );
  table.hidden = collections.length === 0;
  document.getElementById("no-records").hidden = collections.length !== 0;
  status.hidden = true;
  document.getElementById("stats").hidden = false;
}

signout();
const setup = pages[document.body.dataset.page];
if (setup) setup();
