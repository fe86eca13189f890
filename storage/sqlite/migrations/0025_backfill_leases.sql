-- Leases on backfill jobs, so that several instances sharing a database
-- work each job at most once at a time and take over the job of an
-- instance that died. claimed_by is the instance holding the lease (NULL
-- for none), lease_expires_at when it runs out unless renewed
-- (microseconds since the epoch, by the database's clock), lease_token
-- the fencing token, incremented by every claim: a worker's progress
-- writes carry the token they were claimed with and are refused once the
-- job was claimed again.
ALTER TABLE backfill_jobs ADD COLUMN claimed_by TEXT;
ALTER TABLE backfill_jobs ADD COLUMN lease_expires_at INTEGER;
ALTER TABLE backfill_jobs ADD COLUMN lease_token INTEGER NOT NULL DEFAULT 0;
