// Dead letters: GET /admin/dead-letters filtered by collection and state,
// newest first, a page at a time, with the count of what the filters
// match; one dead letter's record and failure (GET /admin/dead-letters/
// {id}) with retry, reindex and dismiss; and the bulk actions on the
// selected rows or on every unresolved dead letter (of the collection).
// The filters live in the query string and the open dead letter in the
// fragment, so that a reload or a link shows the same thing.
import { APIError, call, can, load, query } from "../api.js";
import { $, action, badge, code, confirmed, denied, el, explain, gate, ident, notify, num, showError, time } from "../ui.js";

const READ = "dead-letters:read";
const MANAGE = "dead-letters:manage";

// PAGE is how many dead letters a page of the list holds.
const PAGE = 50;

// The state of the page.
const state = {
  filter: { collection: "", resolved: "false" }, // the filters applied
  cursor: "", // of the next page; "" when there is none
  items: new Map(), // the dead letters shown, by id
  selected: new Set(), // the ids of the selected rows
  manage: false, // whether the admin may act on dead letters
  open: null, // the dead letter shown in the detail
};

// Verbs of the actions, for messages.
const verbs = {
  retry: { label: "Retry", doing: "Retrying", past: "Retried" },
  reindex: { label: "Reindex", doing: "Reindexing", past: "Reindexed" },
  dismiss: { label: "Dismiss", doing: "Dismissing", past: "Dismissed" },
};

export default async function deadLetters() {
  const params = new URLSearchParams(window.location.search);
  state.filter.collection = params.get("collection") ?? "";
  const resolved = params.get("resolved");
  state.filter.resolved = ["true", "false", "all"].includes(resolved) ? resolved : "false";
  $("f-collection").value = state.filter.collection;
  $("f-resolved").value = state.filter.resolved;

  state.manage = await can(MANAGE);
  let failed = null;
  try {
    await list();
  } catch (err) {
    if (!(err instanceof APIError && err.status === 400 && state.filter.collection)) {
      $("status").hidden = true;
      denied(err, READ);
      return;
    }
    failed = err; // a bad collection in the link: show the form to fix it
  }
  $("status").hidden = true;
  $("letters-section").hidden = false;
  if (failed) showError($("f-collection"), failed, READ);
  await gate(MANAGE, "Retrying, reindexing and dismissing dead letters", $("bulk"), $("detail-actions"));
  selection();
  wire();
  collections();
  window.addEventListener("hashchange", route);
  route();
}

// wire connects the page's controls.
function wire() {
  $("filters").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const previous = state.filter;
    state.filter = { collection: $("f-collection").value.trim(), resolved: $("f-resolved").value };
    try {
      await list();
    } catch (err) {
      state.filter = previous;
      const bad = err instanceof APIError && err.status === 400;
      showError(bad ? $("f-collection") : $("list-error"), err, READ);
      if (bad) $("f-collection").focus();
      return;
    }
    showError($("f-collection"), null);
    showError($("list-error"), null);
    const f = state.filter;
    const q = query({ collection: f.collection, resolved: f.resolved === "false" ? "" : f.resolved });
    window.history.replaceState(null, "", window.location.pathname + q);
  });
  $("more").addEventListener("click", async () => {
    try {
      await more();
      showError($("more-error"), null);
    } catch (err) {
      showError($("more-error"), err, READ);
    }
  });
  $("select-page").addEventListener("change", (ev) => {
    for (const box of pickable()) {
      box.checked = ev.target.checked;
      if (box.checked) state.selected.add(box.value);
      else state.selected.delete(box.value);
    }
    selection();
  });
  for (const name of Object.keys(verbs)) {
    bulkSelected(name);
    bulkAll(name);
    single(name);
  }
  $("detail-close").addEventListener("click", () => {
    const id = state.open?.id;
    window.history.pushState(null, "", window.location.pathname + window.location.search);
    closeDetail();
    if (id) document.querySelector(`#letters button[data-id="${CSS.escape(id)}"]`)?.focus();
  });
}

// list shows the first page of the applied filters and their count.
async function list() {
  const f = state.filter;
  const params = { collection: f.collection, resolved: f.resolved };
  const [page, count] = await Promise.all([
    load(`/admin/dead-letters${query({ ...params, limit: PAGE })}`),
    load(`/admin/dead-letters/count${query(params)}`),
  ]);
  state.items.clear();
  state.selected.clear();
  $("letters").tBodies[0].replaceChildren();
  show(page);
  counted(count.count);
  allLegend();
}

// more appends the next page.
async function more() {
  const f = state.filter;
  show(await load(`/admin/dead-letters${query({
    collection: f.collection, resolved: f.resolved, cursor: state.cursor, limit: PAGE,
  })}`));
}

// show appends a page of dead letters to the table.
function show(page) {
  const body = $("letters").tBodies[0];
  for (const d of page.dead_letters || []) {
    state.items.set(d.id, d);
    body.append(row(d));
  }
  state.cursor = page.cursor || "";
  $("more").hidden = !state.cursor;
  $("letters").hidden = state.items.size === 0;
  $("no-letters").hidden = state.items.size !== 0;
  selection();
}

// row renders one dead letter.
function row(d) {
  const pick = el("input", {
    type: "checkbox", class: "pick", value: d.id, disabled: Boolean(d.resolved_at) || !state.manage,
    checked: state.selected.has(d.id),
    "aria-label": `Select the dead letter of ${d.uri}`,
    on: {
      change: (ev) => {
        if (ev.target.checked) state.selected.add(d.id);
        else state.selected.delete(d.id);
        selection();
      },
    },
  });
  const open = el("button", {
    type: "button", class: "secondary", text: "Details", dataset: { id: d.id },
    "aria-label": `Details of the dead letter of ${d.uri}`,
    on: { click: () => { window.location.hash = encodeURIComponent(d.id); } },
  });
  // data-label names each cell's column, for the stacked layout at phone
  // width.
  return el("tr", { dataset: { id: d.id } },
    el("td", { class: "pick" }, pick),
    el("td", { dataset: { label: "Created" } }, time(d.created_at)),
    el("td", { dataset: { label: "Record" } }, ident(d.uri, { what: "AT URI" }),
      el("div", { class: "hint", text: d.collection || d.lexicon_id || "" })),
    el("td", { dataset: { label: "Event" } }, d.kind === d.action ? d.kind : `${d.kind} ${d.action}`),
    el("td", { class: "failure", dataset: { label: "Error" } }, el("span", { text: d.error, title: d.error })),
    el("td", { class: "num", dataset: { label: "Attempts" } }, num(d.attempts)),
    el("td", { class: "state", dataset: { label: "State" } }, stateOf(d)),
    el("td", { class: "open" }, open),
  );
}

// pickable returns the row checkboxes that can be selected.
function pickable() {
  return [...document.querySelectorAll("#letters tbody input.pick:not(:disabled)")];
}

// stateOf says whether a dead letter is resolved, and when.
function stateOf(d) {
  if (!d.resolved_at) return badge("unresolved", { text: "Unresolved", tone: "bad" });
  return el("span", {}, badge("resolved", { text: "Resolved" }), " ", time(d.resolved_at));
}

// counted shows how many dead letters the filters match.
function counted(n) {
  const f = state.filter;
  const which = { false: "unresolved ", true: "resolved ", all: "" }[f.resolved];
  const where = f.collection ? ` in ${f.collection}` : "";
  $("count-line").textContent = `${num(n)} ${which}dead letter${n === 1 ? "" : "s"}${where}.`;
}

// allLegend names what the "all" bulk actions apply to.
function allLegend() {
  const c = state.filter.collection;
  $("all-legend").textContent = c ? `Every unresolved dead letter in ${c}` : "Every unresolved dead letter";
}

// selection updates the selection's legend, its buttons and the
// select-the-page box.
function selection() {
  const n = state.selected.size;
  $("selected-count").textContent = n === 0 ? "No dead letters selected" : `${num(n)} dead letter${n === 1 ? "" : "s"} selected`;
  // A retry or a reindex needs a record dead letter among the selected.
  const records = [...state.selected].filter((id) => state.items.get(id)?.kind !== "label").length;
  $("retry-selected").disabled = records === 0;
  $("reindex-selected").disabled = records === 0;
  $("dismiss-selected").disabled = n === 0;
  const boxes = pickable();
  const on = boxes.filter((b) => b.checked).length;
  const page = $("select-page");
  page.disabled = boxes.length === 0;
  page.checked = boxes.length > 0 && on === boxes.length;
  page.indeterminate = on > 0 && on < boxes.length;
}

// plural renders "n dead letter(s)".
function plural(n) {
  return `${num(n)} dead letter${n === 1 ? "" : "s"}`;
}

// bulkSelected wires "<name> selected". Label-arrival dead letters are
// left out of a retry or a reindex (the API would count them as failed).
function bulkSelected(name) {
  let ids = [];
  action($(`${name}-selected`), {
    confirm: () => {
      const chosen = [...state.selected].map((id) => state.items.get(id)).filter(Boolean);
      const eligible = name === "dismiss" ? chosen : chosen.filter((d) => d.kind !== "label");
      ids = eligible.map((d) => d.id);
      const left = chosen.length - eligible.length;
      let msg = `${verbs[name].label} ${plural(ids.length).replace(" dead", " selected dead")}?`;
      if (name === "dismiss") msg += " They are marked resolved without running any script.";
      if (left) msg += ` ${num(left)} label-arrival dead letter${left === 1 ? " is" : "s are"} left out: they can only be dismissed.`;
      return msg;
    },
    ok: verbs[name].label,
    permission: MANAGE,
    errorBox: $("bulk-error"),
    work: async () => {
      if (ids.length === 0) throw new Error(`Nothing to ${name}: label-arrival dead letters can only be dismissed.`);
      return bulk(name, { ids }, `${verbs[name].doing} ${plural(ids.length)}…`);
    },
    done: (res) => finished(name, res),
  });
}

// bulkAll wires "<name> all" on every unresolved dead letter, of the
// applied collection filter when there is one.
function bulkAll(name) {
  const button = $(`${name}-all`);
  button.addEventListener("click", async () => {
    const collection = state.filter.collection;
    const where = collection ? ` in ${collection}` : "";
    let n;
    try {
      n = (await call("GET", `/admin/dead-letters/count${query({ collection, resolved: "false" })}`)).count;
    } catch (err) {
      showError($("bulk-error"), err, READ);
      return;
    }
    if (n === 0) {
      showError($("bulk-error"), null);
      result(`No unresolved dead letters${where}: nothing to ${name}.`);
      return;
    }
    let msg = `${verbs[name].label} all ${plural(n).replace(" dead", " unresolved dead")}${where}?`;
    if (name === "dismiss") msg += " They are marked resolved without running any script.";
    else msg += " Label-arrival dead letters among them count as failed: they can only be dismissed.";
    if (!(await confirmed(msg, { ok: verbs[name].label }))) return;
    button.disabled = true;
    try {
      const res = await bulk(name, collection ? { all: true, collection } : { all: true }, `${verbs[name].doing} ${plural(n)}…`);
      showError($("bulk-error"), null);
      await finished(name, res);
    } catch (err) {
      showError($("bulk-error"), err, MANAGE);
    } finally {
      button.disabled = false;
    }
  });
}

// bulk calls POST /admin/dead-letters/bulk/<name>, showing progress while
// the (synchronous) call runs.
async function bulk(name, body, doing) {
  $("bulk-result").hidden = true;
  $("bulk-progress-text").textContent = doing;
  $("bulk-progress").hidden = false;
  try {
    return await call("POST", `/admin/dead-letters/bulk/${name}`, { body });
  } finally {
    $("bulk-progress").hidden = true;
  }
}

// finished shows a bulk call's outcome and reads the list again.
async function finished(name, res) {
  if (name === "dismiss") {
    const failed = res.failed ? `; ${num(res.failed)} could not be (already resolved or gone)` : "";
    result(`Dismissed ${num(res.resolved)} of ${plural(res.processed)}${failed}.`);
  } else {
    const failed = res.failed ? `, ${num(res.failed)} failed` : "";
    result(`${verbs[name].past} ${plural(res.processed)}: ${num(res.resolved)} resolved${failed}.`);
  }
  try {
    await list();
  } catch (err) {
    showError($("list-error"), err, READ);
  }
}

// result shows a bulk action's outcome.
function result(message) {
  const box = $("bulk-result");
  box.textContent = message;
  box.hidden = false;
}

// route shows the dead letter named by the fragment, or the list.
async function route() {
  const id = decodeURIComponent(window.location.hash.slice(1));
  if (!id) {
    closeDetail();
    return;
  }
  let d;
  try {
    d = await load(`/admin/dead-letters/${encodeURIComponent(id)}`);
  } catch (err) {
    notify(`Dead letter ${id}: ${explain(err, READ)}`, { error: true });
    return;
  }
  detail(d);
  $("detail-result").hidden = true;
  showError($("detail-action-error"), null);
  $("letters-section").hidden = true;
  $("detail").hidden = false;
  $("detail-heading").focus();
}

// closeDetail shows the list in place of the detail.
function closeDetail() {
  state.open = null;
  $("detail").hidden = true;
  $("letters-section").hidden = false;
}

// detail fills the detail section with dead letter d and keeps its row
// in the list true to it.
function detail(d) {
  state.open = d;
  $("detail-heading").textContent = `Dead letter of ${d.uri}`;
  const fields = [
    ["ID", ident(d.id, { what: "ID" })], ["Kind", d.kind], ["Event", d.action], ["Record", ident(d.uri, { what: "AT URI" })],
    ["Account", ident(d.did, { what: "DID" })],
    ["Collection", d.collection || "–"], ["Record key", d.rkey || "–"], ["Lexicon", d.lexicon_id || "–"],
    ["Attempts", num(d.attempts)], ["Created", time(d.created_at)], ["State", stateOf(d)],
  ];
  $("detail-fields").replaceChildren(...fields.map(([k, v]) => el("div", {}, el("dt", { text: k }), el("dd", {}, v))));
  $("detail-error").textContent = d.error;
  const record = d.record !== null && d.record !== undefined;
  $("detail-record").replaceChildren(...(record ? [code(d.record)] : []));
  $("detail-no-record").hidden = record;
  const unresolved = !d.resolved_at;
  const label = d.kind === "label";
  $("detail-actions").hidden = !state.manage || !unresolved;
  $("detail-retry").hidden = label;
  $("detail-reindex").hidden = label;
  $("detail-label-note").hidden = !label || !unresolved;

  const item = { ...d };
  delete item.record;
  state.items.set(d.id, item);
  if (d.resolved_at) state.selected.delete(d.id);
  const tr = document.querySelector(`#letters tr[data-id="${CSS.escape(d.id)}"]`);
  if (tr) tr.replaceWith(row(item));
  selection();
}

// single wires the detail's <name> button. A label-arrival dead letter
// offers no retry or reindex; forced anyway, the API's 400 is shown.
function single(name) {
  action($(`detail-${name}`), {
    confirm: name === "dismiss" ? "Dismiss this dead letter? It is marked resolved without running any script." : undefined,
    ok: verbs[name].label,
    permission: MANAGE,
    errorBox: $("detail-action-error"),
    work: () => call("POST", `/admin/dead-letters/${encodeURIComponent(state.open.id)}/${name}`),
    done: async (res) => {
      const box = $("detail-result");
      if (res.resolved) {
        box.className = "ok";
        box.textContent = name === "dismiss" ? "Dismissed: the dead letter is resolved."
          : `${verbs[name].label} succeeded: the dead letter is resolved.`;
      } else {
        box.className = "error";
        box.textContent = `${verbs[name].label} failed again: ${res.error ?? "unknown error"}`;
      }
      box.hidden = false;
      try {
        detail(await call("GET", `/admin/dead-letters/${encodeURIComponent(state.open.id)}`));
        counted((await call("GET", `/admin/dead-letters/count${query(state.filter)}`)).count);
      } catch (err) {
        showError($("detail-action-error"), err, READ);
      }
      $("detail-heading").focus();
    },
  });
}

// collections offers the record lexicons' ids as collection suggestions,
// for an admin who may read the lexicons.
async function collections() {
  if (!(await can("lexicons:read"))) return;
  try {
    const lexicons = await call("GET", "/admin/lexicons");
    $("collections").replaceChildren(
      ...lexicons.filter((l) => l.lexicon_type === "record").map((l) => el("option", { value: l.id })),
    );
  } catch {
    // Suggestions only: the field works without them.
  }
}
