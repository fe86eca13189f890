// Overview: the problems, where they happen. A source's last failure
// beside its state; the records validation refused lately (GET
// /admin/stats → refusals) with their reasons, links to their records and
// lexicons; the stored records flagged with a validation error (GET
// /admin/stats/validation); the latest errors of the event log summarised by kind, each
// entry one line with its detail (long strings cut) one click away.
import { load, query } from "../api.js";
import { badge, ident, jsonDetails } from "../format.js";
import { $, el, num, table, time } from "../ui.js";

// sourceState renders a source's state and host, and under it why its
// last connection failed, when, and when a waiting source dials again.
export function sourceState(s) {
  const node = el("div", { class: "source-state" },
    badge(s.state || (s.connected ? "connected" : "disconnected")), s.host ? ` to ${s.host}` : "");
  if (s.last_error) {
    node.append(el("div", { class: "source-error" },
      badge("error", { text: "last error" }), " ", time(s.last_error_at), ": ",
      el("span", { class: "source-error-text", title: s.last_error, text: s.last_error })));
  }
  if (s.state === "waiting" && s.retry_at) {
    node.append(el("div", { class: "hint" }, "retrying ", time(s.retry_at)));
  }
  return node;
}

// refusals renders the latest records validation refused.
export function refusals(list) {
  table($("refusal-list"), list || [], [
    { cell: (f) => time(f.at) },
    { cell: (f) => f.source },
    { cell: (f) => record(f) },
    { cell: (f) => lexicon(f.collection) },
    { cell: (f) => el("span", { class: "reason", title: f.reason, text: f.reason }) },
  ], "no-refusals");
}

// validation renders GET /admin/stats/validation: the modes, the stored
// records flagged with a validation error by lexicon and reason (each
// linked to the lexicon), and the re-validations that ran after lexicon
// revisions (those that validated records, or still run).
export function validation(rep) {
  const own = Object.entries(rep.collections || {}).map(([c, m]) => `${c}: ${m}`).join(", ");
  // The count only when there are some: "no-flagged" says there are none.
  const n = rep.total_invalid;
  const flagged = n === 1 ? " 1 stored record has a validation error." : n > 1 ? ` ${num(n)} stored records have a validation error.` : "";
  $("validation-mode").textContent = `Validation mode: ${rep.mode}${own ? ` (${own})` : ""}.${flagged}`;
  table($("flagged-list"), rep.invalid || [], [
    { cell: (c) => lexicon(c.collection) },
    { cell: (c) => el("span", { class: "reason", title: c.reason, text: c.reason }) },
    { cell: (c) => num(c.count), class: "num" },
  ], "no-flagged");
  const passes = (rep.passes || []).filter((p) => !p.done || p.checked > 0);
  table($("revalidation-list"), passes, [
    { cell: (p) => lexicon(p.collection) },
    { cell: (p) => String(p.revision) },
    { cell: (p) => badge(p.done ? "done" : "running") },
    { cell: (p) => num(p.checked), class: "num" },
    { cell: (p) => num(p.flagged), class: "num" },
    { cell: (p) => num(p.cleared), class: "num" },
  ]);
  $("validation").hidden = false;
}

// record shows a refusal's AT URI (with its copy button), and links the
// records of its author in its collection that the instance holds (an
// earlier version, say).
function record(f) {
  const m = /^at:\/\/([^/]+)\/([^/]+)\//.exec(f.uri);
  const node = el("div", {}, ident(f.uri, { what: "AT URI" }));
  if (m && f.collection !== INVALID) {
    node.append(el("div", { class: "hint" },
      el("a", { href: `/dashboard/records${query({ collection: f.collection, did: m[1] })}`, text: "indexed records of this author" })));
  }
  return node;
}

// INVALID is the collection of a refusal whose collection is not an NSID.
const INVALID = "(invalid)";

function lexicon(collection) {
  if (collection === INVALID) return collection;
  return el("a", { href: `/dashboard/lexicons${query({ id: collection })}`, text: collection });
}

// ERRORS is how many of the latest error entries are summarised.
const ERRORS = 100;

// LATEST is how many of them are listed one by one.
const LATEST = 5;

// CUT is the longest string of an entry's detail shown whole.
const CUT = 200;

// errors summarises the latest error entries of the event log by kind
// (event type) with their counts, and lists the newest of them.
export async function errors() {
  let page;
  try {
    page = await load(`/admin/events${query({ severity: "error", limit: ERRORS })}`);
  } catch {
    return;
  }
  const events = page.events || [];
  const kinds = new Map();
  for (const e of events) {
    const k = kinds.get(e.event_type) || { type: e.event_type, count: 0, last: e };
    k.count++;
    kinds.set(e.event_type, k);
  }
  $("errors-scope").textContent = events.length === ERRORS && page.cursor
    ? `Of the latest ${ERRORS} errors:` : "";
  table($("error-kinds"), [...kinds.values()], [
    { cell: (k) => el("a", { href: `/dashboard/events${query({ event_type: k.type, severity: "error" })}`, text: k.type }) },
    { cell: (k) => num(k.count), class: "num" },
    { cell: (k) => time(k.last.created_at) },
    { cell: (k) => summary(k.last) },
  ], "no-errors");
  $("error-list").replaceChildren(...events.slice(0, LATEST).map(entry));
  $("error-latest").hidden = events.length === 0;
  $("errors").hidden = false;
}

// entry is one error: a one-line summary, its detail folded.
function entry(e) {
  return el("li", {},
    el("div", { class: "error-line" }, time(e.created_at), " ", el("strong", { text: e.event_type }), " ",
      el("span", { class: "error-summary", text: summary(e) })),
    e.detail ? jsonDetails(cut(e.detail), "Detail") : null);
}

// summary is an entry's one line: its subject and what its detail says
// went wrong.
export function summary(e) {
  const d = e.detail && typeof e.detail === "object" ? e.detail : {};
  const why = ["error", "reason", "message", "err"].map((k) => d[k]).find((v) => typeof v === "string" && v);
  const line = [e.subject, why].filter(Boolean).join(": ") || "–";
  const first = line.split("\n")[0];
  return first.length > CUT ? `${first.slice(0, CUT)}…` : first;
}

// cut copies a detail with every string longer than CUT cut, saying how
// much was left out (a script's whole source, say).
export function cut(v) {
  if (typeof v === "string") {
    return v.length > CUT ? `${v.slice(0, CUT)}… (${num(v.length - CUT)} more characters)` : v;
  }
  if (Array.isArray(v)) return v.map(cut);
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, cut(x)]));
  return v;
}
