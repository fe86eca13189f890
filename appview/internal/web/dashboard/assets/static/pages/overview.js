// Overview: GET /admin/stats (records by collection, live ingestion, the
// writer, the running backfill), refreshed every few seconds while the
// page is visible, the status and the charts of the instance's history
// (./overview-charts.js), the app folder served, if any
// (./overview-appfolder.js), and the problems: sources' failures, refused
// and flagged records and the latest errors of the event log
// (./overview-problems.js).
import { can, load } from "../api.js";
import { $, ago, denied, duration, el, num, table, time } from "../ui.js";
import { appFolder } from "./overview-appfolder.js";
import { startCharts } from "./overview-charts.js";
import { errors, refusals, sourceState, validation } from "./overview-problems.js";

// REFRESH is how often the statistics are read again, in milliseconds.
const REFRESH = 2000;

// The previous reading of each source: events per second are the change
// in events_received between two readings.
const previous = new Map();

export default async function overview() {
  let stats;
  try {
    stats = await load("/admin/stats");
  } catch (err) {
    $("status").hidden = true;
    denied(err, "stats:read");
    return;
  }
  $("status").hidden = true;
  show(stats);
  flagged();
  startCharts();
  if (await can("events:read")) errors();
  setInterval(async () => {
    if (document.hidden) return;
    try {
      show(await load("/admin/stats"));
    } catch {
      // Keep the last reading; the next refresh tries again.
    }
    flagged();
  }, REFRESH);
}

// flagged renders the records stored with a validation error and the
// re-validations (GET /admin/stats/validation).
async function flagged() {
  try {
    validation(await load("/admin/stats/validation"));
  } catch {
    // Keep the last reading; the next refresh tries again.
  }
}

// show renders one reading of /admin/stats.
function show(stats) {
  $("total-records").textContent = num(stats.total_records);
  $("lexicon-count").textContent = num(stats.lexicons);
  $("record-collections").textContent = num(stats.record_collections);
  $("first-run").hidden = stats.lexicons !== 0;
  table($("collections"), stats.collections || [], [
    { cell: (c) => c.collection },
    { cell: (c) => num(c.count), class: "num" },
  ], "no-records");
  $("stats").hidden = false;
  appFolder(stats.app_folder);
  ingestion(stats);
  backfill(stats.backfill);
}

// ingestion renders the event sources and the writer.
function ingestion(stats) {
  const now = Date.now();
  const sources = Object.entries(stats.sources || {}).map(([name, s]) => {
    const prev = previous.get(name);
    let rate = null;
    if (prev && now > prev.at) rate = ((s.events_received - prev.events) * 1000) / (now - prev.at);
    previous.set(name, { at: now, events: s.events_received });
    return { name, ...s, rate };
  });
  table($("sources"), sources, [
    { cell: (s) => s.name },
    { cell: (s) => sourceState(s) },
    { cell: (s) => (s.rate === null ? "–" : num(Math.max(0, Math.round(s.rate)))), class: "num" },
    { cell: (s) => lag(s) },
    { cell: (s) => cursor(s) },
    { cell: (s) => num(s.events_received), class: "num" },
    { cell: (s) => num(s.connections_made), class: "num" },
  ], "no-sources");
  const w = stats.writer || {};
  $("writer-queued").textContent = num(w.queued);
  $("writer-committed").textContent = num(w.committed);
  $("writer-rejected").textContent = num(w.rejected);
  $("writer-flagged").textContent = num(w.flagged);
  $("writer-last").replaceChildren(time(w.last_commit_at));
  refusals(stats.refusals);
  $("ingestion").hidden = false;
}

// lag says how far behind the live stream a source is: what the source
// measures from the stream's own event times, else the time since the last
// event arrived.
function lag(s) {
  if (s.event_time) return duration(s.lag_seconds);
  if (s.last_event_at) return `last event ${ago(s.last_event_at)}`;
  return "–";
}

// cursor renders a source's position (Jetstream's as a time too).
function cursor(s) {
  if (!s.cursor) return "none yet";
  if (s.name === "jetstream") return el("span", {}, String(s.cursor), " (", time(new Date(s.cursor / 1000).toISOString()), ")");
  return String(s.cursor);
}

// backfill renders the running job, if any.
function backfill(sum) {
  $("backfill").hidden = !sum;
  if (!sum) return;
  const cur = sum.current;
  $("backfill-idle").hidden = Boolean(cur);
  $("backfill-current").hidden = !cur;
  if (!cur) {
    const waiting = sum.waiting ? ` ${num(sum.waiting)} job(s) are waiting.` : "";
    $("backfill-idle").textContent = `No backfill is running.${waiting}`;
    return;
  }
  const total = cur.total_repos || 0;
  const done = cur.processed_repos || 0;
  $("backfill-what").textContent =
    `Job ${cur.id} (${cur.collection ?? "all collections"}): ${cur.stage}, ` +
    `${num(done)} of ${num(total)} repositories, ${num(cur.total_records)} records.`;
  const bar = $("backfill-progress");
  bar.max = Math.max(total, 1);
  bar.value = done;
}
