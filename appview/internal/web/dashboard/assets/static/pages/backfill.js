// Backfill: start a job (a collection or all, accounts or the whole
// network), follow the selected job live from its Server-Sent Events
// stream (progress by stage, records fetched, rate, estimated time to
// completion), its per-PDS breakdown and repositories, pause, resume and
// cancel it, and the history of jobs, whose per-repository details can be
// deleted.
import { call, load, query } from "../api.js";
import { $, badge, busy, confirmed, denied, duration, el, gate, ident, notify, num, showError, table, time } from "../ui.js";
import { createForm } from "./backfill-create.js";
import { DONE, FINAL, Progress } from "./backfill-progress.js";

// The stream's reconnection delays, in milliseconds, doubling from the
// first to the last after each failed attempt.
const RECONNECT_FIRST = 1000;
const RECONNECT_LAST = 30000;
// DETAILS is the least time between two reloads of the breakdown and
// the repository list while a job runs, in milliseconds.
const DETAILS = 2000;
// LIST_EVERY is how often, in seconds, the job list is read again while
// a job is unfinished.
const LIST_EVERY = 5;
// REPOS is the repository list's page size.
const REPOS = 25;

const STAGES = {
  pending: "waiting for the worker",
  discovering_repos: "discovering repositories",
  resolving_and_fetching: "resolving and fetching",
  completed: "completed",
  failed: "failed",
  cancelled: "cancelled",
};

const state = {
  jobs: [],
  selected: null, // the ID of the job shown
  progress: null, // its Progress
  stream: null, // the stream followed: {id, es, attempts, timer, ended, connected}
  repos: { cursors: [null], page: 0, next: null },
  detailsAt: 0,
  detailsTimer: null,
  liveMessage: "",
};

export default async function backfill() {
  let jobs;
  try {
    jobs = await load("/admin/backfill/status");
  } catch (err) {
    $("status").hidden = true;
    denied(err, "backfill:read");
    return;
  }
  $("status").hidden = true;
  wire();
  if (await gate("backfill:create", "Starting, pausing, resuming and cancelling jobs and deleting their details",
    $("create"), $("job-actions"), $("delete-all-details"))) {
    await createForm(async (id) => {
      await refreshJobs();
      select(id);
    });
  }
  listJobs(jobs);
  $("history").hidden = false;
  const wanted = new URLSearchParams(window.location.search).get("job");
  const pick = jobs.find((j) => j.id === wanted) ??
    jobs.find((j) => !FINAL.has(j.status) && j.stage !== "pending") ??
    jobs.find((j) => !FINAL.has(j.status)) ?? jobs[0];
  if (pick) select(pick.id, false);
  let ticks = 0;
  setInterval(() => {
    if (document.hidden) return;
    if (state.progress && !FINAL.has(state.progress.job.status)) renderJob();
    // Jobs the stream does not cover (others waiting or running) change
    // too: the list is read again every LIST_EVERY seconds while one is
    // unfinished.
    if (++ticks % LIST_EVERY === 0 && state.jobs.some((j) => !FINAL.has(j.status))) refreshJobs();
  }, 1000);
}

function wire() {
  $("job-pause").addEventListener("click", (ev) => steer("pause", ev.currentTarget));
  $("job-resume").addEventListener("click", (ev) => steer("resume", ev.currentTarget));
  $("job-retry").addEventListener("click", (ev) => steer("retry", ev.currentTarget));
  $("job-cancel").addEventListener("click", (ev) => steer("cancel", ev.currentTarget));
  $("job-delete-details").addEventListener("click", deleteDetails);
  $("delete-all-details").addEventListener("click", deleteAllDetails);
  $("repo-phase").addEventListener("change", () => {
    state.repos = { cursors: [null], page: 0, next: null };
    repos();
  });
  $("repos-prev").addEventListener("click", () => {
    if (state.repos.page === 0) return;
    state.repos.page--;
    repos();
  });
  $("repos-next").addEventListener("click", () => {
    if (!state.repos.next) return;
    state.repos.cursors[state.repos.page + 1] = state.repos.next;
    state.repos.page++;
    repos();
  });
}

// refreshJobs reads the job list again. Answers may arrive out of order:
// only the latest request's is shown.
let listLoads = 0;
async function refreshJobs() {
  const mine = ++listLoads;
  let jobs;
  try {
    jobs = await load("/admin/backfill/status");
  } catch {
    return; // The list stays as it was; the selected job follows its stream.
  }
  if (mine === listLoads) listJobs(jobs);
}

// listJobs renders the job history. The selected job, when no stream
// follows it (it has finished), takes the list's state.
function listJobs(jobs) {
  state.jobs = jobs;
  table($("jobs"), jobs, [
    {
      cell: (j) => el("button", {
        type: "button", class: "link", text: j.id.slice(0, 8), title: j.id, "aria-label": `View job ${j.id}`,
        "aria-current": j.id === state.selected ? "true" : null, on: { click: () => select(j.id) },
      }),
    },
    { cell: (j) => j.collection ?? "all" },
    { cell: (j) => scope(j) },
    { cell: (j) => badge(j.status) },
    { cell: (j) => STAGES[j.stage] ?? j.stage },
    { cell: (j) => (j.total_repos == null ? "–" : `${num(j.processed_repos ?? 0)} / ${num(j.total_repos)}`), class: "num" },
    { cell: (j) => num(j.total_records), class: "num" },
    { cell: (j) => time(j.created_at) },
    { cell: (j) => time(j.started_at) },
    { cell: (j) => time(j.completed_at) },
  ], "no-jobs");
  const mine = jobs.find((j) => j.id === state.selected);
  if (mine && state.progress && !state.stream) {
    state.progress.job = { ...mine };
    renderJob();
  }
}

function scope(j) {
  if (j.scope === "network") return "network (through the relay)";
  return j.did ? ident(j.did, { what: "DID" }) : "several named accounts";
}

// select shows job id and follows it live while it is unfinished.
function select(id, focus = true) {
  const job = state.jobs.find((j) => j.id === id);
  if (!job) return;
  stopStream();
  state.selected = id;
  state.progress = new Progress(job);
  state.repos = { cursors: [null], page: 0, next: null };
  window.history.replaceState(null, "", window.location.pathname + query({ job: id }));
  for (const b of document.querySelectorAll("#jobs tbody button")) {
    if (b.getAttribute("aria-label") === `View job ${id}`) b.setAttribute("aria-current", "true");
    else b.removeAttribute("aria-current");
  }
  showError($("job-action-error"), null);
  $("job").hidden = false;
  details(true);
  if (FINAL.has(job.status)) live("The job has finished.");
  else openStream(id);
  renderJob();
  if (focus) $("job-heading").focus();
}

// live sets what the page says about the way it follows the job: the
// stream's trouble (message, while not connected), else the job's state.
// With no message, it is only rendered again.
function live(message) {
  if (message !== undefined) state.liveMessage = message;
  const s = state.stream;
  const j = state.progress?.job;
  let text = state.liveMessage;
  if (s && s.connected && j) {
    text = {
      pausing: "Pausing: the worker stops at its next checkpoint.",
      paused: "Paused: the progress is kept; Resume continues where the job stopped.",
      cancelling: "Cancelling: the worker stops at its next checkpoint.",
    }[j.status] ?? "Live: progress is shown as it happens.";
  }
  $("job-live").textContent = text;
}

// openStream follows job id's progress stream.
function openStream(id) {
  const s = { id, es: null, attempts: 0, timer: null, ended: false, connected: false };
  state.stream = s;
  connect(s);
}

// connect opens the stream's EventSource (same origin: the session
// cookie goes with it). The browser reconnects by itself after a dropped
// connection; a refused one (the server answered an error) is retried
// here with a growing delay, after checking that the job still runs.
function connect(s) {
  const es = new EventSource(`/admin/backfill/${encodeURIComponent(s.id)}/events`);
  s.es = es;
  s.connected = false;
  live("Connecting to the job's progress stream…");
  es.addEventListener("open", () => {
    s.attempts = 0;
    s.connected = true;
    live();
  });
  es.addEventListener("event", (m) => {
    let ev;
    try {
      ev = JSON.parse(m.data);
    } catch {
      return;
    }
    onEvent(s, ev);
  });
  es.addEventListener("error", () => {
    if (s.ended || state.stream !== s) return;
    s.connected = false;
    if (es.readyState === EventSource.CONNECTING) {
      live("The connection dropped; reconnecting…");
      return;
    }
    es.close();
    retry(s);
  });
}

// retry reconnects a refused stream after a delay, unless the job has
// finished or is gone meanwhile (an expired session leads to sign-in).
function retry(s) {
  const delay = Math.min(RECONNECT_LAST, RECONNECT_FIRST * 2 ** s.attempts);
  s.attempts++;
  live(`The progress stream was refused; trying again in ${duration(delay / 1000)}.`);
  s.timer = setTimeout(async () => {
    if (state.stream !== s) return;
    try {
      const jobs = await load("/admin/backfill/status");
      if (state.stream !== s) return;
      listLoads++; // an older list in flight is not shown after this one
      const job = jobs.find((j) => j.id === s.id);
      if (!job || FINAL.has(job.status)) {
        stopStream();
        listJobs(jobs);
        live(job ? "The job has finished." : "The job no longer exists.");
        return;
      }
      listJobs(jobs);
    } catch {
      // Try the stream again all the same.
    }
    if (state.stream === s) connect(s);
  }, delay);
}

function stopStream() {
  const s = state.stream;
  if (!s) return;
  s.ended = true;
  clearTimeout(s.timer);
  if (s.es) s.es.close();
  state.stream = null;
}

// onEvent applies one message of the stream.
function onEvent(s, ev) {
  if (state.stream !== s) return;
  const changed = state.progress.apply(ev);
  if (ev.type === "job_completed") {
    stopStream();
    live(`The job ended: ${ev.status}.`);
    refreshJobs();
    details(true);
  } else if (changed) {
    refreshJobs();
    details(false);
  } else if (ev.type.startsWith("repo_")) {
    details(false);
  }
  scheduleRender();
}

let renderQueued = false;
function scheduleRender() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    renderJob();
  });
}

// renderJob shows the selected job: its fields, the progress bars of the
// stages, the counters, rate and estimate, and the actions its status
// allows.
function renderJob() {
  const p = state.progress;
  if (!p) return;
  const j = p.job;
  const final = FINAL.has(j.status);
  $("job-heading").textContent = `Job ${j.id}`;
  $("job-collection").textContent = j.collection ?? "every collection with a record lexicon";
  $("job-scope").textContent = scope(j);
  $("job-status").replaceChildren(badge(j.status));
  $("job-stage").textContent = STAGES[j.stage] ?? j.stage;
  $("job-created").replaceChildren(time(j.created_at));
  $("job-started").replaceChildren(time(j.started_at));
  $("job-completed").replaceChildren(time(j.completed_at));
  $("job-error").textContent = j.error ? `Error: ${j.error}` : "";
  $("job-error").hidden = !j.error;

  const total = j.total_repos ?? 0;
  const done = DONE.has(j.status);
  const failed = p.failedRepos();
  const discover = $("bar-discover");
  if (j.stage === "discovering_repos") {
    discover.removeAttribute("value"); // indeterminate: the total is not known yet
    $("discover-text").textContent = `${num(total)} found so far`;
  } else {
    bar(discover, j.stage === "pending" || j.total_repos == null ? 0 : 1, 1);
    $("discover-text").textContent = j.stage === "pending" ? "waiting for the worker" : `${num(total)} repositories`;
  }
  bar($("bar-resolve"), done ? total : j.resolved_repos ?? 0, total);
  $("resolve-text").textContent = `${num(j.resolved_repos ?? 0)} of ${num(total)} resolved`;
  bar($("bar-fetch"), done ? total : (j.processed_repos ?? 0) + failed, total);
  $("fetch-text").textContent = `${num(j.processed_repos ?? 0)} of ${num(total)} fetched` +
    (failed ? `, ${num(failed)} failed${reasons(j.failures)}` : "") + (done ? ` (${j.status.replaceAll("_", " ")})` : "");

  $("job-records").textContent = num(j.total_records);
  const rates = final || j.status === "paused" ? null : p.rates();
  $("job-rate").textContent = rates ? `${num(Math.round(Math.max(0, rates.records)))} records/s` : "–";
  $("job-eta").textContent = estimate(p, j);
  const start = j.started_at ? new Date(j.started_at).getTime() : null;
  const end = j.completed_at ? new Date(j.completed_at).getTime() : Date.now();
  $("job-elapsed").textContent = start ? duration((end - start) / 1000) : "–";

  $("job-pause").hidden = j.status !== "running";
  $("job-cancel").hidden = j.status !== "running";
  $("job-resume").hidden = j.status !== "paused";
  $("job-retry").hidden = j.status !== "completed_with_errors";
  $("job-delete-details").hidden = !final;
  live();
}

// reasons lists a job's failures by reason, most first: " (12
// unreachable host, 3 account deleted)"; "" when there are none.
function reasons(failures) {
  const rows = Object.entries(failures ?? {}).sort((a, b) => b[1] - a[1]);
  if (!rows.length) return "";
  return ` (${rows.map(([why, n]) => `${num(n)} ${why.replaceAll("_", " ")}`).join(", ")})`;
}

// bar sets a progress bar to value of max (an empty bar when max is 0).
function bar(node, value, max) {
  node.max = Math.max(max, 1);
  node.value = Math.min(value, node.max);
}

// estimate says when the job should be done.
function estimate(p, j) {
  if (FINAL.has(j.status)) return DONE.has(j.status) ? "done" : "–";
  if (j.status === "paused" || j.status === "pausing") return "paused";
  if (j.stage === "pending") return "waiting for the worker";
  if (j.stage === "discovering_repos") return "after discovery";
  const eta = p.eta();
  return eta === null ? "estimating…" : `about ${duration(eta)}`;
}

// details reloads the per-PDS breakdown and the repository list: at
// once when now is set, else at most every DETAILS milliseconds.
function details(now) {
  if (state.detailsTimer) {
    if (!now) return;
    clearTimeout(state.detailsTimer);
    state.detailsTimer = null;
  }
  const wait = now ? 0 : Math.max(0, state.detailsAt + DETAILS - Date.now());
  state.detailsTimer = setTimeout(() => {
    state.detailsTimer = null;
    state.detailsAt = Date.now();
    pdsSummary();
    repos();
  }, wait);
}

// Each reload of the breakdown and of the repository list gets a number;
// an answer to an older one (which may arrive last) is dropped.
let pdsLoads = 0;
let repoLoads = 0;

async function pdsSummary() {
  const id = state.selected;
  const mine = ++pdsLoads;
  let res;
  try {
    res = await load(`/admin/backfill/${encodeURIComponent(id)}/pds-summary`);
  } catch {
    return;
  }
  if (state.selected !== id || mine !== pdsLoads) return;
  table($("pds"), res.pds_endpoints || [], [
    { cell: (s) => s.pds_endpoint },
    { cell: (s) => num(s.total_repos), class: "num" },
    { cell: (s) => num(s.completed_repos), class: "num" },
    { cell: (s) => num(s.total_records), class: "num" },
  ], "no-pds");
}

async function repos() {
  const id = state.selected;
  const r = state.repos;
  const mine = ++repoLoads;
  let res;
  try {
    res = await load(`/admin/backfill/${encodeURIComponent(id)}/repos${query({
      phase: $("repo-phase").value, cursor: r.cursors[r.page], limit: REPOS,
    })}`);
  } catch (err) {
    if (mine === repoLoads) showError($("repos-error"), err, "backfill:read");
    return;
  }
  if (state.selected !== id || state.repos !== r || mine !== repoLoads) return;
  showError($("repos-error"), null);
  r.next = res.cursor;
  table($("repos"), res.repos || [], [
    { cell: (x) => ident(x.did, { what: "DID" }) },
    { cell: (x) => x.pds_endpoint ?? "–" },
    { cell: (x) => badge(x.status, { tone: { fetched: "ok", failed: "bad" }[x.status] }) },
    { cell: (x) => num(x.records_fetched), class: "num" },
  ], "no-repos");
  $("repos-prev").disabled = r.page === 0;
  $("repos-next").disabled = !r.next;
  $("repos-page").textContent = `Page ${r.page + 1}`;
}

// steer pauses, resumes, cancels (confirmed) or retries the selected job.
async function steer(verb, button) {
  const j = state.progress.job;
  if (verb === "cancel" && !(await confirmed(
    `Cancel backfill job ${j.id}? The records fetched so far stay indexed; a cancelled job cannot be resumed.`,
    { ok: "Cancel the job" },
  ))) return;
  const box = $("job-action-error");
  let res;
  try {
    res = await busy(button, () => call("POST", `/admin/backfill/${encodeURIComponent(j.id)}/${verb}`));
  } catch (err) {
    showError(box, err, "backfill:create");
    return;
  }
  showError(box, null);
  j.status = res.status;
  notify(`Job ${j.id}: ${res.status}.`);
  renderJob();
  await refreshJobs();
  if (!state.stream && !FINAL.has(j.status)) openStream(j.id);
}

async function deleteDetails() {
  const j = state.progress.job;
  if (!(await confirmed(`Delete the per-repository details of job ${j.id}? The job and its counters stay.`))) return;
  try {
    await busy($("job-delete-details"), () => call("DELETE", `/admin/backfill/${encodeURIComponent(j.id)}/details`));
  } catch (err) {
    showError($("job-action-error"), err, "backfill:create");
    return;
  }
  showError($("job-action-error"), null);
  notify(`The details of job ${j.id} were deleted.`);
  details(true);
}

async function deleteAllDetails() {
  if (!(await confirmed("Delete the per-repository details of every completed, cancelled and failed job? The jobs and their counters stay."))) return;
  try {
    await busy($("delete-all-details"), () => call("DELETE", "/admin/backfill/details"));
  } catch (err) {
    showError($("delete-all-error"), err, "backfill:create");
    return;
  }
  showError($("delete-all-error"), null);
  notify("The details of every finished job were deleted.");
  if (state.selected) details(true);
}
