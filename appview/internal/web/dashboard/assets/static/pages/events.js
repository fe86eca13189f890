// Event log: GET /admin/events filtered by exact type, category, severity
// and subject, newest first, older pages on demand, each entry's detail
// as JSON; and a live tail that reads the newest page again every
// TAIL_EVERY milliseconds and adds the entries not shown yet. The filters
// and the tail's state live in the query string.
import { APIError, load, query } from "../api.js";
import { $, code, copyButton, denied, el, ident, showError, time } from "../ui.js";

const READ = "events:read";

// PAGE is how many entries a page holds (the API's maximum, so that the
// tail sees as much as one call can show).
const PAGE = 100;

// TAIL_EVERY is how often the live tail reads the log, in milliseconds.
const TAIL_EVERY = 2000;

// FRESH is how long a new entry stays highlighted, in milliseconds.
const FRESH = 4000;

// The filters, by query parameter, and their fields.
const FIELDS = { event_type: "f-type", category: "f-category", severity: "f-severity", subject: "f-subject" };

const state = {
  filter: {}, // the filters applied, by query parameter
  cursor: "", // of the next older page; "" when there is none
  shown: new Set(), // the ids of the entries shown
  timer: 0, // the live tail's interval
  polling: false, // a tail read is under way
  arrived: 0, // entries the tail added since it started
  types: new Set(), // the types and categories seen, for suggestions
  categories: new Set(),
};

export default async function events() {
  const params = new URLSearchParams(window.location.search);
  for (const [name, id] of Object.entries(FIELDS)) {
    const v = params.get(name) ?? "";
    $(id).value = v;
    if (v) state.filter[name] = v;
  }
  try {
    await first();
  } catch (err) {
    if (!(err instanceof APIError && err.status === 400)) {
      $("status").hidden = true;
      denied(err, READ);
      return;
    }
    failed(err); // a bad filter in the link: show the form to fix it
  }
  $("status").hidden = true;
  $("log").hidden = false;
  wire();
  if (params.get("tail") === "1") {
    $("tail").checked = true;
    tail(true);
  }
}

// wire connects the page's controls.
function wire() {
  $("filters").addEventListener("submit", (ev) => {
    ev.preventDefault();
    apply(read());
  });
  $("f-clear").addEventListener("click", () => {
    for (const id of Object.values(FIELDS)) $(id).value = "";
    apply({});
  });
  $("older").addEventListener("click", async () => {
    try {
      const page = await load(`/admin/events${query({ ...state.filter, cursor: state.cursor, limit: PAGE })}`);
      append(page.events || []);
      state.cursor = page.cursor || "";
      $("older").hidden = !state.cursor;
      showError($("older-error"), null);
    } catch (err) {
      showError($("older-error"), err, READ);
    }
  });
  $("tail").addEventListener("change", (ev) => {
    tail(ev.target.checked);
    remember();
  });
}

// read returns the filter form's values, by query parameter.
function read() {
  const f = {};
  for (const [name, id] of Object.entries(FIELDS)) {
    const v = $(id).value.trim();
    if (v) f[name] = v;
  }
  return f;
}

// apply shows the first page under filters f, after checking what can
// be checked here: a category is the part of a type before its first dot.
async function apply(f) {
  for (const id of Object.values(FIELDS)) showError($(id), null);
  showError($("list-error"), null);
  if (f.category?.includes(".")) {
    const err = new Error(`A category is the part of a type before its first dot ("${f.category.split(".")[0]}" for ` +
      `${f.category}); use Type to match one type exactly.`);
    showError($("f-category"), err);
    $("f-category").focus();
    return;
  }
  const previous = state.filter;
  state.filter = f;
  try {
    await first();
  } catch (err) {
    state.filter = previous;
    failed(err);
    return;
  }
  remember();
}

// failed shows a failed read next to its cause: the severity field for
// the API's severity error, else under the filters.
function failed(err) {
  if (err instanceof APIError && err.status === 400 && /severity/.test(err.message)) {
    showError($("f-severity"), err, READ);
  } else {
    showError($("list-error"), err, READ);
  }
}

// remember puts the filters and the tail's state in the query string.
function remember() {
  const q = query({ ...state.filter, tail: $("tail").checked ? "1" : "" });
  window.history.replaceState(null, "", window.location.pathname + q);
}

// first shows the newest page of the applied filters.
async function first() {
  const page = await load(`/admin/events${query({ ...state.filter, limit: PAGE })}`);
  replace(page);
}

// replace shows page in place of every entry shown.
function replace(page) {
  state.shown.clear();
  $("events").tBodies[0].replaceChildren();
  append(page.events || []);
  state.cursor = page.cursor || "";
  $("older").hidden = !state.cursor;
}

// append adds entries (older than every one shown) at the end.
function append(entries) {
  const body = $("events").tBodies[0];
  for (const e of entries) {
    if (state.shown.has(e.id)) continue;
    body.append(row(e));
    seen(e);
  }
  shown();
}

// seen records that entry e is shown, and its type for suggestions.
function seen(e) {
  state.shown.add(e.id);
  if (!state.types.has(e.event_type)) {
    state.types.add(e.event_type);
    $("types").append(el("option", { value: e.event_type }));
    const category = e.event_type.split(".")[0];
    if (!state.categories.has(category)) {
      state.categories.add(category);
      $("categories").append(el("option", { value: category }));
    }
  }
}

// shown updates the table's and the empty message's visibility.
function shown() {
  $("events").hidden = state.shown.size === 0;
  $("no-events").hidden = state.shown.size !== 0;
}

// row renders one entry.
function row(e) {
  const detail = e.detail && Object.keys(e.detail).length > 0
    ? el("details", {}, el("summary", { text: summary(e.detail) }), code(e.detail))
    : "–";
  // data-label names each cell's column, for the stacked layout at phone
  // width.
  return el("tr", { dataset: { id: e.id }, class: `sev-${e.severity}` },
    el("td", { class: "when", dataset: { label: "When" } }, time(e.created_at)),
    el("td", { class: "type", dataset: { label: "Type" } }, narrow("f-type", e.event_type, "type")),
    el("td", { dataset: { label: "Severity" } }, el("span", { class: `badge severity ${e.severity}`, text: e.severity })),
    el("td", { class: "subject", dataset: { label: "Subject" } }, e.subject ? subject(e.subject) : "–"),
    el("td", { class: "subject", dataset: { label: "Actor" } }, ident(e.actor_did, { what: "DID" })),
    el("td", { class: "detail", dataset: { label: "Detail" } }, detail),
  );
}

// subject renders an entry's subject as an identifier (format.js ident:
// one line, cut with an ellipsis, a copy button) whose text is the
// button that filters the log by it.
function subject(value) {
  const b = narrow("f-subject", value, "subject");
  b.classList.add("ident-text");
  b.title = value;
  return el("span", { class: "ident" }, b, copyButton(value, "subject"));
}

// narrow renders value as a button that filters the log by it (the
// filter field id; what names it for assistive technology).
function narrow(id, value, what) {
  return el("button", {
    type: "button", class: "link", text: value, "aria-label": `Show only the entries of ${what} ${value}`,
    on: {
      click: () => {
        $(id).value = value;
        apply(read());
      },
    },
  });
}

// summary names a detail's fields for its disclosure.
function summary(detail) {
  const keys = Object.keys(detail);
  const shown = keys.slice(0, 3).join(", ");
  return keys.length > 3 ? `${shown}, … (${keys.length} fields)` : shown;
}

// tail starts or stops the live tail.
function tail(on) {
  clearInterval(state.timer);
  state.timer = 0;
  if (!on) {
    $("tail-status").textContent = "";
    return;
  }
  state.arrived = 0;
  $("tail-status").textContent = "Live: new entries appear as they are recorded.";
  state.timer = setInterval(poll, TAIL_EVERY);
  poll();
}

// poll reads the newest page and adds the entries not shown yet that
// belong above the oldest one shown (an entry committed late, with a
// lower id, is placed where it belongs). When every entry of the page is
// new, more arrived than one read holds: the page replaces the list.
async function poll() {
  if (state.polling || document.hidden) return;
  state.polling = true;
  try {
    const f = state.filter;
    const page = await load(`/admin/events${query({ ...f, limit: PAGE })}`);
    if (f !== state.filter || !state.timer) return; // the filters changed or the tail stopped meanwhile
    const list = page.events || [];
    const oldest = oldestShown();
    const fresh = list.filter((e) => !state.shown.has(e.id) && (oldest === null || Number(e.id) > oldest));
    let note = "";
    if (state.shown.size === 0 || (fresh.length === list.length && page.cursor)) {
      if (state.shown.size > 0) note = ` More entries arrived than one read holds: the newest ${list.length} replaced the list.`;
      replace(page);
      for (const tr of $("events").tBodies[0].rows) highlight(tr);
    } else {
      insert(fresh);
    }
    state.arrived += fresh.length;
    const n = state.arrived;
    $("tail-status").replaceChildren("Live: last read ", time(new Date().toISOString()),
      `; ${n} new entr${n === 1 ? "y" : "ies"} since the tail started.${note}`);
  } catch (err) {
    $("tail-status").textContent = `Live tail: the last read failed (${err.message}); trying again.`;
  } finally {
    state.polling = false;
  }
}

// oldestShown returns the lowest id shown, or null.
function oldestShown() {
  const rows = $("events").tBodies[0].rows;
  return rows.length ? Number(rows[rows.length - 1].dataset.id) : null;
}

// insert places new entries among the rows by id, newest first, and
// highlights them.
function insert(entries) {
  const body = $("events").tBodies[0];
  for (const e of entries) {
    const tr = row(e);
    const after = [...body.rows].find((r) => Number(r.dataset.id) < Number(e.id));
    body.insertBefore(tr, after ?? null);
    seen(e);
    highlight(tr);
  }
  shown();
}

// highlight marks a row as new for a while.
function highlight(tr) {
  tr.classList.add("fresh");
  setTimeout(() => tr.classList.remove("fresh"), FRESH);
}
