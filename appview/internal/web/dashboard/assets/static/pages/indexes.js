// Indexes: the declared field indexes (GET /admin/indexes) with their
// state and the progress of their build, refreshed every few seconds;
// declare one (POST /admin/indexes), drop one (DELETE, confirmed), and the
// index suggestions (GET /admin/indexes/suggestions), each declared with
// one click. Declaring and dropping need indexes:manage.
import { call, can, load } from "../api.js";
import { $, action, ago, badge, denied, el, fieldError, formJSON, gate, notify, num, table, time } from "../ui.js";

// REFRESH is how often the lists are read again, in milliseconds.
const REFRESH = 2000;

// manage is whether the admin may declare and drop indexes.
let manage = false;

export default async function indexes() {
  manage = await gate("indexes:manage", "Declaring and dropping indexes");
  if (!(await refresh(true))) return;
  if (manage) {
    declareForm();
    $("declare").hidden = false;
    collections();
  }
  setInterval(() => {
    if (!document.hidden) refresh(false);
  }, REFRESH);
}

// collections offers the collections holding records in the form, for an
// admin who may list them.
async function collections() {
  if (!(await can("records:read"))) return;
  try {
    const list = await load("/admin/records/collections");
    $("collections").replaceChildren(...list.map((c) => el("option", { value: c.collection })));
  } catch {
    // The field takes any NSID all the same.
  }
}

// declareForm wires the declaration form: a 400 is shown next to the
// field it names.
function declareForm() {
  const form = $("declare-form");
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    try {
      const idx = await declare(formJSON(form));
      fieldError(form, null, { fallback: $("declare-error") });
      $("path").value = "";
      await refresh(false);
      notify(idx.created ? `Declared the ${idx.kind} index on ${idx.collection} ${idx.path}: it is being built.`
        : `The ${idx.kind} index on ${idx.collection} ${idx.path} was declared already (${idx.state}).`);
    } catch (err) {
      fieldError(form, err, { fallback: $("declare-error"), permission: "indexes:manage" });
    } finally {
      button.disabled = false;
    }
  });
}

// declare declares an index and resolves to it, with created telling
// whether it is new (201) or existed (200).
async function declare(body) {
  const before = new Set(last.indexes.map((i) => i.id));
  const idx = await call("POST", "/admin/indexes", { body });
  return { ...idx, created: !before.has(idx.id) };
}

// The lists last rendered, and their shapes (what, when it changes, is
// rendered anew rather than updated in place, so that the keyboard focus
// stays on its button while a build progresses).
const last = { indexes: [], shape: "", suggestShape: "" };

// refresh reads the indexes and the suggestions and renders them. The
// first time, a failure is shown as the page's denial and refresh
// resolves to false; later ones keep the last reading.
async function refresh(first) {
  let list, suggestions;
  try {
    [list, suggestions] = await Promise.all([load("/admin/indexes"), load("/admin/indexes/suggestions")]);
  } catch (err) {
    if (first) {
      $("status").hidden = true;
      denied(err, "indexes:read");
    }
    return false;
  }
  $("status").hidden = true;
  $("list").hidden = false;
  $("suggested").hidden = false;
  renderIndexes(list.indexes);
  renderSuggestions(suggestions.suggestions);
  return true;
}

function renderIndexes(list) {
  last.indexes = list;
  const shape = JSON.stringify(list.map((i) => [i.id, i.state]));
  if (shape === last.shape) {
    const rows = $("indexes").tBodies[0].rows;
    list.forEach((i, n) => rows[n].cells[4].replaceChildren(build(i)));
    return;
  }
  last.shape = shape;
  table($("indexes"), list, [
    { cell: (i) => el("code", { text: i.collection }) },
    { cell: (i) => el("code", { text: i.path }) },
    { cell: (i) => i.kind },
    { cell: stateOf },
    { cell: build },
    { cell: (i) => time(i.created_at) },
    { cell: dropButton },
  ], "no-indexes");
}

// stateOf renders an index's state.
function stateOf(i) {
  return badge(i.state);
}

// build renders the progress of an index's build: a bar and the records
// done, or why it failed.
function build(i) {
  if (i.state === "failed") return el("span", { class: "bad", text: i.error ?? "failed" });
  const label = `Build of the index on ${i.collection} ${i.path}`;
  const text = i.state === "ready" ? `${num(i.done)} records` : `${num(i.done)} of ${num(i.total)} records`;
  return el("div", {},
    el("progress", { max: 1, value: i.progress, "aria-label": label }),
    el("span", { class: "build-text", text }));
}

// dropButton is an index's drop button, for an admin who may drop it.
function dropButton(i) {
  if (!manage) return "–";
  const b = el("button", { type: "button", class: "danger", text: "Drop", "aria-label": `Drop the index on ${i.collection} ${i.path}` });
  action(b, {
    confirm: `Drop the ${i.kind} index on ${i.collection} ${i.path}? Queries on the field read the whole collection again; declared again, the index is built anew.`,
    ok: "Drop",
    permission: "indexes:manage",
    errorBox: $("list-error"),
    work: () => call("DELETE", `/admin/indexes/${i.id}`),
    done: async () => {
      await refresh(false);
      notify(`Dropped the index on ${i.collection} ${i.path}.`);
    },
  });
  return b;
}

function renderSuggestions(list) {
  const shape = JSON.stringify(list.map((s) => [s.collection, s.field]));
  if (shape === last.suggestShape) {
    const rows = $("suggestions").tBodies[0].rows;
    list.forEach((s, n) => {
      rows[n].cells[2].textContent = num(s.count);
      rows[n].cells[3].textContent = num(s.records);
      rows[n].cells[4].replaceChildren(seen(s));
    });
    return;
  }
  last.suggestShape = shape;
  table($("suggestions"), list, [
    { cell: (s) => el("code", { text: s.collection }) },
    { cell: (s) => el("code", { text: s.field }) },
    { cell: (s) => num(s.count), class: "num" },
    { cell: (s) => num(s.records), class: "num" },
    { cell: seen },
    { cell: declareButton },
  ], "no-suggestions");
}

// seen renders when a suggestion was last seen.
function seen(s) {
  return el("span", { title: s.last_seen, text: ago(s.last_seen) });
}

// declareButton declares a suggested index in one click.
function declareButton(s) {
  if (!manage) return "–";
  const b = el("button", { type: "button", text: "Declare", "aria-label": `Declare a ${s.kind} index on ${s.collection} ${s.field}` });
  action(b, {
    permission: "indexes:manage",
    errorBox: $("suggest-error"),
    work: () => declare({ collection: s.collection, path: s.field, kind: s.kind }),
    done: async (idx) => {
      await refresh(false);
      notify(`Declared the ${idx.kind} index on ${idx.collection} ${idx.path}: it is being built.`);
    },
  });
  return b;
}
