// The progress arithmetic of the backfill page: a job's counters as they
// arrive from its event stream, turned into a record rate and an estimated
// time to completion. No DOM here.

// WINDOW is how far back, in milliseconds, the rates look.
const WINDOW = 30000;

// FINAL are the statuses a job does not leave.
export const FINAL = new Set(["completed", "completed_with_errors", "failed", "cancelled"]);

// DONE are the statuses of a job that went through every repository.
export const DONE = new Set(["completed", "completed_with_errors"]);

// Progress follows one job: its counters, the repositories seen failing
// since it was watched, and timed samples of the counters.
export class Progress {
  constructor(job) {
    this.job = { ...job };
    this.failed = 0;
    this.samples = [];
    this.sample();
  }

  // apply folds one event of the stream into the job; it returns true when
  // the job's status or stage changed.
  apply(ev) {
    const j = this.job;
    const before = `${j.status}/${j.stage}`;
    switch (ev.type) {
      case "job_counters":
      case "job_completed":
        for (const k of ["status", "stage", "total_repos", "resolved_repos", "processed_repos", "failed_repos", "total_records"]) {
          if (k in ev) j[k] = ev[k];
        }
        if (ev.type === "job_completed") {
          j.error = ev.error ?? null;
          j.failures = ev.failures ?? {};
        }
        break;
      case "job_stage_changed":
        j.stage = ev.stage;
        break;
      case "repo_fetched":
        if (ev.status === "failed" && j.failed_repos == null) this.failed++;
        break;
      default:
        break;
    }
    if (ev.type === "job_counters" || ev.type === "job_completed") this.sample();
    return before !== `${j.status}/${j.stage}`;
  }

  // failedRepos is the job's failed repositories: its counter, or, from
  // an instance that does not report one, those seen failing.
  failedRepos() {
    return this.job.failed_repos ?? this.failed;
  }

  // sample records the counters now, keeping the window's worth.
  sample(now = Date.now()) {
    const j = this.job;
    this.samples.push({ at: now, records: j.total_records ?? 0, done: (j.processed_repos ?? 0) + this.failedRepos() });
    while (this.samples.length > 2 && now - this.samples[1].at > WINDOW) this.samples.shift();
  }

  // rates returns records and repositories per second over the window, or
  // null before there are two samples a second apart.
  rates(now = Date.now()) {
    this.sample(now);
    const first = this.samples[0];
    const last = this.samples[this.samples.length - 1];
    const secs = (last.at - first.at) / 1000;
    if (secs < 1) return null;
    return { records: (last.records - first.records) / secs, repos: (last.done - first.done) / secs };
  }

  // remaining is the number of repositories left to fetch, or null while
  // they are still being discovered.
  remaining() {
    const j = this.job;
    if (j.stage !== "resolving_and_fetching" || j.total_repos == null) return null;
    return Math.max(0, j.total_repos - (j.processed_repos ?? 0) - this.failedRepos());
  }

  // eta returns the estimated seconds to completion, or null when it
  // cannot be told (not fetching yet, no progress in the window).
  eta(now = Date.now()) {
    const left = this.remaining();
    if (left === null) return null;
    if (left === 0) return 0;
    const r = this.rates(now);
    if (!r || r.repos <= 0) return null;
    return left / r.repos;
  }
}
