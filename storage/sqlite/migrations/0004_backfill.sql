-- Backfill jobs and the repositories each one works through. Counters are
-- NULL until a job starts. relay_cursor is where discovery resumes.
CREATE TABLE backfill_jobs (
    id              TEXT PRIMARY KEY,
    collection      TEXT,
    did             TEXT,
    scope           TEXT NOT NULL,
    dids            TEXT NOT NULL DEFAULT '[]',
    status          TEXT NOT NULL,
    stage           TEXT NOT NULL,
    total_repos     INTEGER,
    resolved_repos  INTEGER,
    processed_repos INTEGER,
    total_records   INTEGER,
    error           TEXT,
    relay_cursor    TEXT,
    started_at      INTEGER,
    completed_at    INTEGER,
    created_at      INTEGER NOT NULL
);
CREATE INDEX backfill_jobs_status ON backfill_jobs (status, created_at);
CREATE INDEX backfill_jobs_created ON backfill_jobs (created_at DESC);

CREATE TABLE backfill_repos (
    job_id          TEXT NOT NULL REFERENCES backfill_jobs (id) ON DELETE CASCADE,
    did             TEXT NOT NULL,
    pds_endpoint    TEXT,
    status          TEXT NOT NULL,
    records_fetched INTEGER NOT NULL DEFAULT 0,
    error           TEXT,
    PRIMARY KEY (job_id, did)
);
CREATE INDEX backfill_repos_status ON backfill_repos (job_id, status, did);
CREATE INDEX backfill_repos_pds ON backfill_repos (job_id, pds_endpoint);
