// Records: browse the indexed records by collection and account (GET
// /admin/records, paged with its cursor), view one record's JSON and the
// labels on it and its author, delete records (records:delete) and a whole
// collection (records:delete-collection), each after a confirmation.
import { APIError, call, load, query } from "../api.js";
import { $, code, confirmed, denied, el, gate, ident, notify, num, showError, table, time } from "../ui.js";

// The browsing state: the filters applied, the cursors of the pages seen
// (cursors[i] opens page i; page 0 has none), the page shown and its
// records, the records selected on it, and the record in the detail view.
const state = {
  collection: "",
  did: "",
  limit: 50,
  cursors: [null],
  page: 0,
  next: null,
  items: [],
  selected: new Set(),
  current: null,
  canDelete: false,
  counts: new Map(),
};

// Each listing request gets a number; an answer to an older one is dropped.
let generation = 0;

export default async function records() {
  let collections;
  try {
    collections = await load("/admin/records/collections");
  } catch (err) {
    $("status").hidden = true;
    denied(err, "records:read");
    return;
  }
  $("status").hidden = true;
  const params = new URLSearchParams(window.location.search);
  state.collection = params.get("collection") ?? "";
  state.did = params.get("did") ?? "";
  const limit = Number(params.get("limit"));
  if ([25, 50, 100].includes(limit)) state.limit = limit;
  fillCollections(collections);
  $("did").value = state.did;
  $("limit").value = String(state.limit);

  state.canDelete = await gate("records:delete", "Deleting records", $("bulk"), $("delete-record"));
  await gate("records:delete-collection", "Deleting a whole collection", $("delete-collection"));
  wire();
  $("browse").hidden = false;
  await show();
}

// fillCollections lists the collections holding records in the picker,
// with their counts, keeping the chosen one (listed even when it holds no
// records any more).
function fillCollections(collections) {
  state.counts = new Map(collections.map((c) => [c.collection, c.count]));
  const select = $("collection");
  const options = [el("option", { value: "", text: "All collections" })];
  for (const c of collections) {
    options.push(el("option", { value: c.collection, text: `${c.collection} (${num(c.count)})` }));
  }
  if (state.collection && !state.counts.has(state.collection)) {
    options.push(el("option", { value: state.collection, text: `${state.collection} (0)` }));
  }
  select.replaceChildren(...options);
  select.value = state.collection;
  collectionActions();
}

// refreshCollections reads the collections again (after a deletion).
async function refreshCollections() {
  try {
    fillCollections(await load("/admin/records/collections"));
  } catch {
    // The counts stay as they were; the listing itself is current.
  }
}

// collectionActions shows the chosen collection's count and the button
// deleting it.
function collectionActions() {
  const c = state.collection;
  $("collection-actions").hidden = !c;
  if (!c) return;
  const n = state.counts.get(c) ?? 0;
  $("collection-count").textContent = `${c} holds ${num(n)} record${n === 1 ? "" : "s"}.`;
  $("delete-collection").textContent = `Delete every record of ${c}`;
}

function wire() {
  $("filters").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const did = $("did").value.trim();
    if (did && !did.startsWith("did:")) {
      showError($("did"), new Error("Enter the account's DID (did:plc:… or did:web:…), or leave it empty for every account."));
      $("did").focus();
      return;
    }
    state.collection = $("collection").value;
    state.did = did;
    state.limit = Number($("limit").value) || 50;
    restart();
  });
  $("collection").addEventListener("change", () => $("filters").requestSubmit());
  $("prev-page").addEventListener("click", () => {
    if (state.page > 0) {
      state.page--;
      show();
    }
  });
  $("next-page").addEventListener("click", () => {
    if (!state.next) return;
    state.cursors[state.page + 1] = state.next;
    state.page++;
    show();
  });
  $("select-all").addEventListener("change", (ev) => {
    const on = ev.target.checked;
    state.selected = new Set(on ? state.items.map((r) => r.uri) : []);
    for (const box of document.querySelectorAll("#records tbody input[type=checkbox]")) box.checked = on;
    selection();
  });
  $("delete-selected").addEventListener("click", deleteSelected);
  $("delete-record").addEventListener("click", deleteCurrent);
  $("delete-collection").addEventListener("click", deleteCollection);
  $("close-detail").addEventListener("click", closeDetail);
}

// restart shows the first page of the current filters and records them
// in the address, so that the view can be linked and reloaded.
function restart() {
  state.cursors = [null];
  state.page = 0;
  const q = query({ collection: state.collection, did: state.did, limit: state.limit === 50 ? "" : state.limit });
  window.history.replaceState(null, "", window.location.pathname + q);
  collectionActions();
  closeDetail();
  show();
}

// show loads and renders the current page.
async function show() {
  const mine = ++generation;
  for (const id of ["collection", "did"]) showError($(id), null);
  showError($("page-error"), null);
  let page;
  try {
    page = await load(`/admin/records${query({
      collection: state.collection, did: state.did, cursor: state.cursors[state.page], limit: state.limit,
    })}`);
  } catch (err) {
    if (mine !== generation) return;
    listingFailed(err);
    return;
  }
  if (mine !== generation) return;
  state.items = page.records || [];
  state.next = page.cursor;
  state.selected.clear();
  render();
}

// listingFailed puts a refused listing's reason next to its cause.
function listingFailed(err) {
  const msg = err instanceof APIError ? err.message : "";
  if (msg.includes("invalid did")) showError($("did"), err);
  else if (msg.includes("collection")) showError($("collection"), err);
  else if (msg.includes("invalid cursor")) {
    state.cursors = [null];
    state.page = 0;
    showError($("page-error"), new Error("The page position is no longer valid; showing the first page."));
    show();
    return;
  } else showError($("page-error"), err, "records:read");
  $("results").hidden = false;
}

// render fills the table with the page's records.
function render() {
  const columns = [
    {
      cell: (r) => el("button", {
        type: "button", class: "link", text: `${r.collection}/${r.rkey}`, "aria-label": `View ${r.uri}`,
        on: { click: () => openDetail(r) },
      }),
    },
    { cell: (r) => ident(r.did, { what: "DID" }) },
    { cell: (r) => time(r.created_at) },
    { cell: (r) => time(r.indexed_at) },
    { cell: (r) => labelBadges(r.labels) },
  ];
  if (state.canDelete) {
    columns.unshift({
      class: "select-col",
      cell: (r) => el("input", {
        type: "checkbox", "aria-label": `Select ${r.uri}`, checked: state.selected.has(r.uri),
        on: {
          change: (ev) => {
            if (ev.target.checked) state.selected.add(r.uri);
            else state.selected.delete(r.uri);
            selection();
          },
        },
      }),
    });
  }
  document.querySelector("#records th.select-col").hidden = !state.canDelete;
  table($("records"), state.items, columns, "no-records");
  const first = state.page * state.limit + 1;
  const where = [state.collection || "every collection", state.did ? `account ${state.did}` : ""].filter(Boolean).join(", ");
  $("summary").textContent = state.items.length
    ? `Records ${num(first)}–${num(first + state.items.length - 1)} of ${where}, newest first${state.did ? " (by record key)" : ""}.`
    : "";
  $("prev-page").disabled = state.page === 0;
  $("next-page").disabled = !state.next;
  $("page-number").textContent = `Page ${state.page + 1}`;
  $("select-all").checked = false;
  selection();
  $("results").hidden = false;
}

// labelBadges lists a record's label values.
function labelBadges(labels) {
  if (!labels || labels.length === 0) return "–";
  return el("span", { class: "row" }, ...labels.map((l) => el("span", { class: "badge", text: l.val, title: `from ${l.src}` })));
}

// selection updates the bulk-delete button for the records selected.
function selection() {
  const n = state.selected.size;
  $("delete-selected").disabled = n === 0;
  $("selected-count").textContent = n ? `${n} selected` : "";
}

// openDetail shows one record: its fields, labels and JSON.
function openDetail(r) {
  state.current = r;
  $("detail-heading").textContent = `Record ${r.collection}/${r.rkey}`;
  $("detail-uri").replaceChildren(ident(r.uri, { what: "AT URI" }));
  $("detail-did").replaceChildren(ident(r.did, { what: "DID" }));
  $("detail-cid").textContent = r.cid || "–";
  $("detail-created").replaceChildren(time(r.created_at));
  $("detail-indexed").replaceChildren(time(r.indexed_at));
  table($("labels"), r.labels || [], [
    { cell: (l) => el("span", { class: "badge", text: l.val }) },
    { cell: (l) => (l.uri === r.uri ? "this record" : `its author (${l.uri})`) },
    { cell: (l) => l.src },
    { cell: (l) => time(l.cts) },
    { cell: (l) => (l.exp ? time(l.exp) : "never") },
  ], "no-labels");
  $("detail-json").replaceChildren(code(r.record));
  showError($("delete-record-error"), null);
  $("detail").hidden = false;
  $("detail-heading").focus();
}

function closeDetail() {
  state.current = null;
  $("detail").hidden = true;
}

// deleteCurrent deletes the record in the detail view.
async function deleteCurrent() {
  const r = state.current;
  if (!r) return;
  if (!(await confirmed(`Delete the record ${r.uri} from the index? The account's repository keeps it; a backfill would index it again.`))) return;
  const box = $("delete-record-error");
  try {
    await call("DELETE", "/admin/records", { body: { uris: [r.uri] } });
  } catch (err) {
    showError(box, err, "records:delete");
    return;
  }
  closeDetail();
  afterDelete(`Deleted ${r.uri}.`);
}

// deleteSelected deletes the records selected on the page.
async function deleteSelected() {
  const uris = [...state.selected];
  if (uris.length === 0) return;
  if (!(await confirmed(`Delete ${uris.length} selected record${uris.length === 1 ? "" : "s"} from the index?`))) return;
  const box = $("delete-selected-error");
  let res;
  try {
    res = await call("DELETE", "/admin/records", { body: { uris } });
  } catch (err) {
    showError(box, err, "records:delete");
    return;
  }
  showError(box, null);
  if (state.current && uris.includes(state.current.uri)) closeDetail();
  afterDelete(`Deleted ${num(res.deleted)} record${res.deleted === 1 ? "" : "s"}.`);
}

// deleteCollection deletes every record of the chosen collection.
async function deleteCollection() {
  const c = state.collection;
  if (!c) return;
  const n = state.counts.get(c) ?? 0;
  if (!(await confirmed(`Delete all ${num(n)} records of ${c} from the index? This cannot be undone; a backfill would fetch them again.`,
    { ok: "Delete the collection" }))) return;
  const box = $("delete-collection-error");
  let res;
  try {
    res = await call("DELETE", `/admin/records/collection${query({ collection: c })}`);
  } catch (err) {
    showError(box, err, "records:delete-collection");
    return;
  }
  showError(box, null);
  closeDetail();
  afterDelete(`Deleted ${num(res.deleted)} records of ${c}.`);
}

// afterDelete reports a deletion and shows the page again (the previous
// one when the page is now empty), with the counts read again.
async function afterDelete(message) {
  notify(message);
  await refreshCollections();
  await show();
  if (state.items.length === 0 && state.page > 0) {
    state.page--;
    await show();
  }
}
