-- Backfill jobs and the repositories each one works through. Counters are
-- NULL until a job starts. relay_cursor is where discovery resumes.
CREATE TABLE backfill_jobs (
    id              TEXT PRIMARY KEY,
    collection      TEXT,
    did             TEXT,
    scope           TEXT NOT NULL,
    dids            JSONB NOT NULL DEFAULT '[]',
    status          TEXT NOT NULL,
    stage           TEXT NOT NULL,
    total_repos     BIGINT,
    resolved_repos  BIGINT,
    processed_repos BIGINT,
    total_records   BIGINT,
    error           TEXT,
    relay_cursor    TEXT,
    started_at      TIMESTAMPTZ,
    completed_at    TIMESTAMPTZ,
    created_at      TIMESTAMPTZ NOT NULL
);
CREATE INDEX backfill_jobs_status ON backfill_jobs (status, created_at);
CREATE INDEX backfill_jobs_created ON backfill_jobs (created_at DESC);

CREATE TABLE backfill_repos (
    job_id          TEXT NOT NULL REFERENCES backfill_jobs (id) ON DELETE CASCADE,
    did             TEXT COLLATE "C" NOT NULL,
    pds_endpoint    TEXT,
    status          TEXT NOT NULL,
    records_fetched BIGINT NOT NULL DEFAULT 0,
    error           TEXT,
    PRIMARY KEY (job_id, did)
);
CREATE INDEX backfill_repos_status ON backfill_repos (job_id, status, did);
CREATE INDEX backfill_repos_pds ON backfill_repos (job_id, pds_endpoint);
