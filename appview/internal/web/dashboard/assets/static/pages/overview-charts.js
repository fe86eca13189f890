// The overview's charts and status: GET /admin/stats/history (the last
// hour or the last day of the instance's figures, its health and the
// running backfill job's rates), read again at each new point while the
// tab is visible, drawn with ../chart.js.
import { load } from "../api.js";
import { drawChart } from "../chart.js";
import { showHealth } from "../status.js";
import { $, duration, el } from "../ui.js";

// The least and most time between two readings, in milliseconds.
const MIN_REFRESH = 2000;
const MAX_REFRESH = 60000;

// TOP is how many methods or event types a chart shows besides "all".
const TOP = 4;

// state: the window and method shown, the next reading's timer, and the
// number of the latest reading asked for (an older answer is dropped).
const state = { window: "hour", method: "all", timer: null, reading: 0 };

const figures = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });

// short renders a number with fewer decimals as it grows.
function short(v) {
  if (v === null || v === undefined) return "–";
  const a = Math.abs(v);
  if (a >= 100) return figures.format(Math.round(v));
  if (a >= 10) return figures.format(Math.round(v * 10) / 10);
  return figures.format(v);
}

// The units of the charts' values.
const units = {
  perSecond: (v) => (v === null ? "–" : `${short(v)}/s`),
  perMinute: (v) => (v === null ? "–" : `${short(v)}/min`),
  millis: (v) => (v === null ? "–" : `${short(v)} ms`),
  seconds: (v) => (v === null ? "–" : v >= 120 ? `${short(v / 60)} min` : `${short(v)} s`),
};

// The parts' and statuses' names.
const PARTS = { ingestion: "Ingestion", backfill: "Backfill", database: "Database" };
const BADGES = { ok: "OK", warn: "Degraded", bad: "Failing", off: "Off", unknown: "Unknown" };

// startCharts shows the charts and keeps them current.
export async function startCharts() {
  for (const w of ["hour", "day"]) {
    $(`window-${w}`).addEventListener("click", () => {
      if (state.window === w) return;
      state.window = w;
      for (const o of ["hour", "day"]) $(`window-${o}`).setAttribute("aria-pressed", String(o === w));
      refresh();
    });
  }
  $("latency-method").addEventListener("change", (ev) => {
    state.method = ev.target.value;
    refresh();
  });
  await refresh();
}

// refresh reads the selected window, draws it and schedules the next
// reading at the window's next point.
async function refresh() {
  clearTimeout(state.timer);
  const reading = ++state.reading;
  let every = MIN_REFRESH;
  try {
    const w = await load(`/admin/stats/history?window=${state.window}`);
    if (reading !== state.reading) return; // a newer reading was asked for
    render(w);
    every = Math.min(MAX_REFRESH, Math.max(MIN_REFRESH, w.interval_seconds * 1000));
  } catch {
    if (reading !== state.reading) return;
    // Keep what is shown; the next reading tries again.
  }
  state.timer = setTimeout(function again() {
    if (document.hidden) {
      state.timer = setTimeout(again, every);
      return;
    }
    refresh();
  }, every);
}

// series returns the series of metric in w as {label, values}, the labels
// in order first (those present), then the others by their sum, largest
// first, at most limit of them.
function series(w, metric, { first = [], limit = Infinity, skip = [] } = {}) {
  const all = w.series[metric] || {};
  const sum = (vs) => vs.reduce((a, v) => a + (v ?? 0), 0);
  const rest = Object.keys(all).filter((l) => !first.includes(l) && !skip.includes(l))
    .sort((a, b) => sum(all[b]) - sum(all[a]) || a.localeCompare(b));
  return [...first.filter((l) => l in all), ...rest].slice(0, limit).map((label) => ({ label, values: all[label] }));
}

// render draws one window.
function render(w) {
  showHealth(w.health);
  healthParts(w.health);
  const seconds = w.window === "hour";
  const draw = (id, list, format, empty) => drawChart($(id), { times: w.times, series: list, format, seconds, empty });
  const noSource = "No event source is configured: live ingestion is off.";
  draw("chart-events", series(w, "events_per_second"), units.perSecond, noSource);
  draw("chart-lag", series(w, "lag_seconds"), units.seconds, noSource);
  draw("chart-writer", series(w, "writer_per_second", { first: ["committed", "refused"] }), units.perSecond);
  draw("chart-calls", series(w, "xrpc_calls_per_second", { first: ["all"], limit: TOP + 1 }), units.perSecond);
  methods(w);
  const p = w.series.xrpc_p50_ms?.[state.method];
  const q = w.series.xrpc_p99_ms?.[state.method];
  draw("chart-latency", [p && { label: "p50", values: p }, q && { label: "p99", values: q }].filter(Boolean), units.millis,
    "No XRPC call yet.");
  const problems = series(w, "problems_per_minute", { limit: TOP + 1 }).filter((s) => s.values.some((v) => v > 0));
  draw("chart-problems", problems, units.perMinute, "No warning or error recorded.");
  draw("chart-backfill", series(w, "backfill_per_second", { first: ["records"], skip: ["repos"] }), units.perSecond);
  draw("chart-database", series(w, "database_ping_ms"), units.millis, "The database did not answer.");
  const step = w.window === "hour" ? `${short(w.interval_seconds)} s` : `${short(w.interval_seconds / 60)} min`;
  $("charts-note").textContent = w.window === "hour"
    ? `A point every ${step}, since this instance started: the last hour is kept in memory.`
    : `A point every ${step}: the last day is stored, and survives a restart.`;
  speed(w.backfill);
  $("charts").hidden = false;
}

// methods offers the methods with series of their own in the latency
// chart's picker, keeping the selection while it is there.
function methods(w) {
  const select = $("latency-method");
  const labels = series(w, "xrpc_calls_per_second", { first: ["all"], skip: ["other"] }).map((s) => s.label);
  if ("other" in (w.series.xrpc_calls_per_second || {})) labels.push("other");
  if (!labels.includes("all")) labels.unshift("all");
  const names = { all: "All methods", other: "Other methods" };
  const current = [...select.options].map((o) => o.value).join("\n");
  if (current !== labels.join("\n")) {
    select.replaceChildren(...labels.map((l) => el("option", { value: l, text: names[l] ?? l })));
  }
  if (!labels.includes(state.method)) state.method = "all";
  select.value = state.method;
}

// healthParts lists the parts of the health with their status.
function healthParts(health) {
  const list = $("health-parts");
  list.replaceChildren(...(health.parts || []).map((p) =>
    el("li", { class: "health-part", dataset: { status: p.status, part: p.name } },
      el("span", { class: "badge", text: BADGES[p.status] ?? p.status }),
      el("strong", { text: PARTS[p.name] ?? p.name }),
      el("span", { class: "health-message", text: p.message }))));
  $("health-detail").hidden = list.children.length === 0;
}

// speed shows the running backfill job's rates and estimated time left
// under its progress bar.
function speed(job) {
  const box = $("backfill-speed");
  if (!job) {
    box.textContent = "";
    return;
  }
  const rates = job.repos_per_second === null ? "measuring the rate…"
    : `${units.perSecond(job.repos_per_second)} repositories, ${units.perSecond(job.records_per_second)} records`;
  let eta = "";
  if (job.eta_seconds !== null) eta = job.eta_seconds === 0 ? "; finishing" : `; about ${duration(job.eta_seconds)} left`;
  else if (job.total_repos !== null) eta = "; estimating the time left…";
  box.textContent = `${rates}${eta}`;
}
