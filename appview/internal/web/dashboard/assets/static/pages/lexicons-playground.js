// The XRPC playground of a query or procedure lexicon: inputs made from
// the lexicon's parameters (and a JSON body for a procedure), a call of
// /xrpc/<nsid> from this browser with an API client's key, and the
// answer's status, JSON and timing.
//
// Every XRPC call needs an API client key (X-Client-Key; docs/xrpc.md).
// The playground offers the instance's active clients (GET
// /admin/api-clients, api-clients:view), a key typed in, and, when the
// instance has none, creating a public "Dashboard playground" client
// (POST /admin/api-clients, api-clients:create) for this origin.
import { call, can, load } from "../api.js";
import { codeEditor, jsonError } from "../editor.js";
import { $, busy, code, el, explain, showError } from "../ui.js";

// OTHER is the client choice "a key typed in".
const OTHER = "";

// playground sets up the playground of lexicon l (a detail answer).
export async function playground(l) {
  const main = l.lexicon_json?.defs?.main || {};
  const procedure = l.lexicon_type === "procedure";
  const method = procedure ? "POST" : "GET";
  $("pg-method").textContent = `${method} /xrpc/${l.id}`;
  params(main.parameters);
  $("pg-body-row").hidden = !procedure;
  const input = procedure ? codeEditor($("pg-body")) : null;
  await clients();
  $("playground").hidden = false;

  $("pg-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const qs = query();
    if (qs === null) return;
    const headers = { Accept: "application/json" };
    const key = clientKey();
    if (key) headers["X-Client-Key"] = key;
    const init = { method, headers, credentials: "same-origin" };
    if (procedure) {
      const text = $("pg-body").value;
      const bad = jsonError(text);
      if (bad) {
        showError($("pg-body"), new Error(bad.line ? `The input does not parse at line ${bad.line}, column ${bad.column}: ${bad.message}` : bad.message));
        if (bad.line) input.mark(bad.line, bad.column);
        return;
      }
      showError($("pg-body"), null);
      input.clear();
      init.body = text;
      headers["Content-Type"] = "application/json";
    }
    const url = `/xrpc/${l.id}${qs}`;
    await busy($("pg-call"), () => send(url, init));
  });
}

// send calls url and shows the answer and how long it took.
async function send(url, init) {
  const started = performance.now();
  let status;
  let text;
  try {
    const resp = await fetch(url, init);
    text = await resp.text();
    status = `${resp.status} ${resp.statusText}`.trim();
    $("pg-status").className = resp.ok ? "badge ok" : "badge bad";
  } catch (err) {
    status = "no answer";
    text = explain(err);
    $("pg-status").className = "badge bad";
  }
  const ms = performance.now() - started;
  $("pg-status").textContent = status;
  $("pg-time").textContent = ms < 10 ? `${ms.toFixed(1)} ms` : `${Math.round(ms)} ms`;
  $("pg-url").textContent = `${init.method} ${url}`;
  let answer;
  try {
    answer = code(JSON.parse(text));
  } catch {
    answer = el("pre", { class: "code", text: text || "(an empty answer)" });
  }
  $("pg-answer").replaceChildren(answer);
  $("pg-result").hidden = false;
}

// params makes one labelled input per parameter of the lexicon.
function params(def) {
  const props = def?.properties || {};
  const required = new Set(def?.required || []);
  const rows = Object.entries(props).map(([name, p]) => {
    const id = `pg-param-${name}`;
    const hint = [p.type, p.format, p.description].filter(Boolean).join(" · ") +
      (p.type === "array" ? " (comma-separated, sent as repeated parameters)" : "");
    let input;
    let values = null;
    if (p.type === "boolean") {
      input = el("select", { id, name, dataset: { type: p.type } },
        el("option", { value: "", text: "–" }), el("option", { value: "true", text: "true" }), el("option", { value: "false", text: "false" }));
    } else {
      input = el("input", {
        id, name, type: p.type === "integer" ? "number" : "text", autocomplete: "off", spellcheck: "false",
        min: p.minimum, max: p.maximum, placeholder: p.default !== undefined ? String(p.default) : null,
        required: required.has(name), dataset: { type: p.type }, "aria-describedby": `${id}-error ${id}-hint`,
      });
      if (p.enum || p.knownValues) {
        const listID = `${id}-values`;
        input.setAttribute("list", listID);
        values = el("datalist", { id: listID }, ...(p.enum || p.knownValues).map((v) => el("option", { value: String(v) })));
      }
    }
    return el("div", { class: "param" },
      el("label", { for: id }, name, required.has(name) ? el("span", { class: "hint", text: " (required)" }) : null),
      input,
      values,
      el("p", { id: `${id}-hint`, class: "hint", text: hint }),
      el("p", { id: `${id}-error`, class: "error", role: "alert", hidden: true }));
  });
  if (rows.length === 0) rows.push(el("p", { class: "hint", text: "The lexicon declares no parameters." }));
  $("pg-param-list").replaceChildren(...rows);
}

// query reads the parameter inputs into a query string ("" when empty),
// or returns null after marking a required parameter left empty.
function query() {
  const q = new URLSearchParams();
  for (const input of $("pg-param-list").querySelectorAll("input, select")) {
    const v = input.value.trim();
    if (v === "") {
      if (input.required) {
        showError(input, new Error(`${input.name} is required.`));
        input.focus();
        return null;
      }
      continue;
    }
    showError(input, null);
    if (input.dataset.type === "array") {
      for (const part of v.split(",").map((s) => s.trim()).filter(Boolean)) q.append(input.name, part);
    } else q.set(input.name, v);
  }
  for (const [k, v] of new URLSearchParams($("pg-extra").value.trim().replace(/^\?/, ""))) q.append(k, v);
  const s = q.toString();
  return s ? `?${s}` : "";
}

// clientKey is the chosen client's key, or the key typed in.
function clientKey() {
  const sel = $("pg-client");
  if (!sel.hidden && sel.value !== OTHER) return sel.value;
  return $("pg-key").value.trim();
}

// clients offers the active API clients, or explains why there are none
// and offers to create one.
async function clients() {
  const sel = $("pg-client");
  const keyRow = $("pg-key-row");
  sel.addEventListener("change", () => {
    keyRow.hidden = sel.value !== OTHER;
  });
  if (!(await can("api-clients:view"))) {
    sel.hidden = true;
    sel.previousElementSibling.hidden = true;
    keyRow.hidden = false;
    $("pg-client-help").textContent = "Every XRPC call carries an API client key (X-Client-Key). Your account lacks the " +
      "api-clients:view permission to list the instance's clients: enter a client key (hvc_…).";
    return;
  }
  let all;
  try {
    all = await load("/admin/api-clients");
  } catch (err) {
    showError($("pg-client-help"), err, "api-clients:view");
    keyRow.hidden = false;
    return;
  }
  fill(all.filter((c) => c.is_active));
}

// fill puts the active clients in the client choice.
function fill(active) {
  const sel = $("pg-client");
  sel.replaceChildren(
    ...active.map((c) => el("option", { value: c.client_key, text: `${c.name} (${c.client_key})` })),
    el("option", { value: OTHER, text: "Another key…" }),
  );
  const preferred = active.find((c) => c.name === PLAYGROUND);
  if (preferred) sel.value = preferred.client_key;
  $("pg-key-row").hidden = active.length > 0;
  $("pg-no-client").hidden = active.length > 0;
  if (active.length === 0) noClient();
}

// PLAYGROUND names the client the playground creates.
const PLAYGROUND = "Dashboard playground";

// noClient explains that a call needs a client and offers to create one.
async function noClient() {
  const create = $("pg-create-client");
  const may = await can("api-clients:create");
  $("pg-no-client-text").textContent = "This instance has no active API client, and every XRPC call needs one's key " +
    "(a call without it answers 401 Missing client identification). " +
    (may
      ? `Create a public client named "${PLAYGROUND}" for this dashboard's origin, add one on the API clients page, or enter a key.`
      : "Your account lacks the api-clients:create permission to create one: ask an admin who has it, or enter a key.");
  create.hidden = !may;
  $("pg-no-client").hidden = false;
  if (!may || create.dataset.wired) return;
  create.dataset.wired = "1";
  create.addEventListener("click", async () => {
    const origin = window.location.origin;
    const body = {
      name: PLAYGROUND,
      client_id_url: `${origin}/dashboard/lexicons?playground-client`,
      client_uri: origin,
      redirect_uris: [`${origin}/dashboard/`],
      client_type: "public",
      allowed_origins: [origin],
    };
    try {
      const c = await busy(create, () => call("POST", "/admin/api-clients", { body }));
      showError($("pg-create-error"), null);
      fill([{ client_key: c.client_key, name: c.name, is_active: true }]);
    } catch (err) {
      showError($("pg-create-error"), err, "api-clients:create");
    }
  });
}
