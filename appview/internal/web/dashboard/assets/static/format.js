// Formatting every page shares, so that the console reads at a glance:
// times as "3 min ago" with the absolute time on hover, identifiers
// (DIDs, AT URIs, NSIDs, ids) on one line, cut with an ellipsis, their
// full value in the tooltip and a copy button beside, states as badges of
// one palette, and JSON folded behind a one-line summary. The styles are
// in console.css. No framework: plain DOM.

const absolute = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });

// relative says how long before (or after) now a time was: "just now",
// "3 min ago", "in 2 h", "5 d ago"; beyond 30 days the date itself. when
// is an ISO 8601 string, a Date or milliseconds; now is for tests.
export function relative(when, now = Date.now()) {
  const d = when instanceof Date ? when : new Date(when);
  const ms = now - d.getTime();
  if (!Number.isFinite(ms)) return "–";
  const s = Math.round(Math.abs(ms) / 1000);
  if (s < 5) return "just now";
  let n;
  if (s < 60) n = `${s} s`;
  else if (s < 3600) n = `${Math.round(s / 60)} min`;
  else if (s < 86400) n = `${Math.round(s / 3600)} h`;
  else if (s < 30 * 86400) n = `${Math.round(s / 86400)} d`;
  else return new Intl.DateTimeFormat(undefined, { dateStyle: "medium" }).format(d);
  return ms >= 0 ? `${n} ago` : `in ${n}`;
}

// absoluteTime is the tooltip of a time: the viewer's local date and
// time, then the exact value as the server sent it.
export function absoluteTime(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return `${absolute.format(d)} (${iso})`;
}

// timeEl renders an ISO 8601 timestamp as a <time> reading "3 min ago",
// its absolute time as the title; it is kept current while on the page.
// "–" when absent, the raw text when it does not parse.
export function timeEl(iso) {
  if (!iso) return document.createTextNode("–");
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return document.createTextNode(String(iso));
  const node = document.createElement("time");
  node.dateTime = iso;
  node.title = absoluteTime(iso);
  node.dataset.relative = "";
  node.textContent = relative(d);
  tick();
  return node;
}

// refreshTimes rewrites the text of every relative <time> under root.
export function refreshTimes(root = document) {
  for (const t of root.querySelectorAll("time[data-relative]")) t.textContent = relative(t.dateTime);
}

let ticking = false;

// tick starts, once, the timer that keeps relative times current.
function tick() {
  if (ticking) return;
  ticking = true;
  setInterval(() => refreshTimes(), 15000);
}

// copyButton is a small button that copies value to the clipboard and
// says so ("Copied", or how to copy by hand when the clipboard refuses).
export function copyButton(value, what = "value") {
  const b = document.createElement("button");
  b.type = "button";
  b.className = "copy";
  b.title = `Copy ${what}`;
  b.setAttribute("aria-label", `Copy ${what}`);
  // The glyph is the stylesheet's (by data-copied), so that a cell's
  // text is its value alone.
  b.addEventListener("click", async (ev) => {
    ev.preventDefault();
    ev.stopPropagation();
    try {
      await navigator.clipboard.writeText(value);
      b.dataset.copied = "yes";
      b.title = "Copied";
    } catch {
      b.dataset.copied = "no";
      b.title = "The browser refused the clipboard: select the value and copy it";
    }
    setTimeout(() => {
      delete b.dataset.copied;
      b.title = `Copy ${what}`;
    }, 2000);
  });
  return b;
}

// ident renders an identifier (DID, AT URI, NSID, id) on one line: cut
// with an ellipsis when its column is narrow, the full value as its title
// and, unless copy is false, a copy button beside it. "–" when absent.
export function ident(value, { copy = true, what = "value" } = {}) {
  if (value === null || value === undefined || value === "") return document.createTextNode("–");
  const v = String(value);
  const wrap = document.createElement("span");
  wrap.className = "ident";
  const text = document.createElement("span");
  text.className = "ident-text";
  text.title = v;
  text.textContent = v;
  wrap.append(text);
  if (copy) wrap.append(copyButton(v, what));
  return wrap;
}

// tones maps the states the admin API reports to a badge's colour.
const tones = {
  ok: ["ok", "ready", "connected", "complete", "completed", "done", "active", "loaded", "resolved", "succeeded",
    "success", "healthy", "authorized", "verified", "enabled", "info"],
  run: ["running", "building", "pending", "queued", "connecting", "started", "starting", "retrying",
    "in_progress", "backfilling", "refreshing", "fetching"],
  warn: ["warn", "warning", "paused", "degraded", "stale", "waiting", "reconnecting", "partial", "expired",
    "cancelled", "canceled", "unauthorized", "completed_with_errors"],
  bad: ["failed", "error", "errored", "disconnected", "dead", "refused", "rejected", "bad", "invalid",
    "deleted", "revoked"],
};
const toneOf = new Map(Object.entries(tones).flatMap(([tone, states]) => states.map((s) => [s, tone])));

// tone is the badge colour of a state: ok, run, warn, bad, or idle for a
// state it does not know.
export function tone(state) {
  return toneOf.get(String(state ?? "").toLowerCase().replace(/[\s-]+/g, "_")) ?? "idle";
}

// badge renders a state as a coloured badge: text (the state by default)
// with the state's tone (or the tone given).
export function badge(state, { text, tone: t, title } = {}) {
  const b = document.createElement("span");
  const k = t ?? tone(state);
  b.className = `badge state state-${k}`;
  b.dataset.state = k;
  if (title) b.title = title;
  b.textContent = text ?? String(state ?? "–");
  return b;
}

// jsonDetails folds a JSON value behind a one-line summary: a <details>
// whose <summary> says what it is (summary, or the value's shape) and
// whose body is the indented JSON.
export function jsonDetails(value, summary) {
  const d = document.createElement("details");
  d.className = "json";
  const s = document.createElement("summary");
  s.textContent = summary ?? shape(value);
  const pre = document.createElement("pre");
  pre.className = "json";
  pre.textContent = JSON.stringify(value, null, 2);
  d.append(s, pre);
  return d;
}

// shape summarises a JSON value in a few words: an object's first keys,
// an array's length.
export function shape(value) {
  if (Array.isArray(value)) return `${value.length} item${value.length === 1 ? "" : "s"}`;
  if (value && typeof value === "object") {
    const keys = Object.keys(value);
    if (keys.length === 0) return "empty object";
    const head = keys.slice(0, 4).join(", ");
    return keys.length > 4 ? `${head} and ${keys.length - 4} more` : head;
  }
  return JSON.stringify(value);
}
