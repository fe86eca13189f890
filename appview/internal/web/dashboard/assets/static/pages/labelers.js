// Labelers: GET /admin/labelers (status, cursor) with each labeler's
// latest event-log entry (its connection state, for an admin who may read
// the log), refreshed every few seconds; add one by DID (POST), pause or
// resume it (PATCH) and delete it (DELETE, confirmed: its labels go too).
import { call, can, load, query } from "../api.js";
import { $, action, ago, badge, denied, el, gate, ident, notify, num, showError, table, time } from "../ui.js";

// REFRESH is how often the list is read again, in milliseconds.
const REFRESH = 3000;

// The admin's permissions for the page's actions.
const perms = { create: false, del: false, events: false };

export default async function labelers() {
  perms.create = await gate("labelers:create", "Adding, pausing and resuming labelers");
  perms.del = await gate("labelers:delete", "Deleting labelers");
  perms.events = await can("events:read");
  if (!(await refresh(true))) return;
  if (perms.create) {
    addForm();
    $("add").hidden = false;
  }
  setInterval(() => {
    if (!document.hidden) refresh(false);
  }, REFRESH);
}

// addForm wires the add form: a 400 is shown next to the field.
function addForm() {
  const form = $("add-form");
  const input = $("did");
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const button = form.querySelector("button[type=submit]");
    const did = input.value.trim();
    button.disabled = true;
    try {
      await call("POST", "/admin/labelers", { body: { did } });
      showError(input, null);
      input.value = "";
      await refresh(false);
      notify(`Following ${did}.`);
    } catch (err) {
      showError(input, err, "labelers:create");
      input.focus();
    } finally {
      button.disabled = false;
    }
  });
}

// refresh reads the labelers and renders them. The first time, a failure
// is shown as the page's denial and refresh resolves to false; later
// ones keep the last reading.
let shape = "";
async function refresh(first) {
  let list;
  try {
    list = await load("/admin/labelers");
  } catch (err) {
    if (first) {
      $("status").hidden = true;
      denied(err, "labelers:read");
    }
    return false;
  }
  const events = await lastEvents(list);
  $("status").hidden = true;
  $("list").hidden = false;
  // The same labelers with the same statuses: only the cursors and last
  // events change, in place, so that the keyboard focus stays on its
  // button while a busy labeler's cursor moves.
  const now = JSON.stringify(list.map((l) => [l.did, l.status]));
  if (now === shape) {
    const rows = $("labelers").tBodies[0].rows;
    list.forEach((l, i) => {
      rows[i].cells[2].textContent = cursor(l);
      rows[i].cells[3].replaceChildren(lastEvent(events.get(l.did)));
    });
    return true;
  }
  shape = now;
  table($("labelers"), list, [
    { cell: (l) => ident(l.did, { what: "DID" }) },
    { cell: (l) => badge(l.status) },
    { cell: cursor, class: "num" },
    { cell: (l) => lastEvent(events.get(l.did)) },
    { cell: (l) => time(l.created_at) },
    { cell: actions },
  ], "no-labelers");
  return true;
}

// cursor renders a labeler's cursor.
function cursor(l) {
  return l.cursor === null ? "none yet" : num(l.cursor);
}

// lastEvents reads the latest labeler.* event-log entry of each labeler,
// when the admin may read the event log.
async function lastEvents(list) {
  const out = new Map();
  if (!perms.events) return out;
  await Promise.all(list.map(async (l) => {
    try {
      const page = await load(`/admin/events${query({ category: "labeler", subject: l.did, limit: 1 })}`);
      if (page.events?.length) out.set(l.did, page.events[0]);
    } catch {
      // The column shows "–".
    }
  }));
  return out;
}

// lastEvent renders an event-log entry: its type (the error of a failed
// connection), and when.
function lastEvent(e) {
  if (!perms.events) return el("span", { class: "hint", text: "needs events:read" });
  if (!e) return document.createTextNode("–");
  const what = e.event_type.replace(/^labeler\./, "").replaceAll("_", " ");
  const cls = e.severity === "error" || e.severity === "warn" ? "bad" : "";
  const detail = e.detail?.error ? `: ${e.detail.error}` : "";
  return el("span", {}, el("span", { class: cls, text: what + detail }), " ", el("span", { class: "hint", title: e.created_at, text: `(${ago(e.created_at)})` }));
}

// actions are a labeler's buttons, as the admin's permissions allow.
function actions(l) {
  const box = $("list-error");
  const buttons = [];
  if (perms.create) {
    const next = l.status === "active" ? "paused" : "active";
    const b = el("button", { type: "button", class: "secondary", text: next === "paused" ? "Pause" : "Resume",
      "aria-label": `${next === "paused" ? "Pause" : "Resume"} ${l.did}` });
    action(b, {
      permission: "labelers:create",
      errorBox: box,
      work: () => call("PATCH", `/admin/labelers/${encodeURIComponent(l.did)}`, { body: { status: next } }),
      done: async () => {
        await refresh(false);
        notify(next === "paused" ? `Paused ${l.did}: its cursor and labels are kept.` : `Resumed ${l.did} from its cursor.`);
      },
    });
    buttons.push(b);
  }
  if (perms.del) {
    const b = el("button", { type: "button", class: "danger", text: "Delete", "aria-label": `Delete ${l.did}` });
    action(b, {
      confirm: `Delete the labeler ${l.did}? This removes every label it emitted from this instance, and its cursor: added again, its stream is replayed from the start.`,
      permission: "labelers:delete",
      errorBox: box,
      work: () => call("DELETE", `/admin/labelers/${encodeURIComponent(l.did)}`),
      done: async () => {
        await refresh(false);
        notify(`Deleted ${l.did} and its labels.`);
      },
    });
    buttons.push(b);
  }
  return buttons.length ? el("div", { class: "actions" }, ...buttons) : "–";
}
