-- Why a backfill repository failed (a reason the job's counts group by),
-- how many of its fetches failed in a way that may mend (retries are
-- bounded across restarts), and the failed repositories of a job, counted
-- beside the other counters.
ALTER TABLE backfill_repos ADD COLUMN failure_reason TEXT;
ALTER TABLE backfill_repos ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE backfill_jobs ADD COLUMN failed_repos INTEGER;
UPDATE backfill_jobs SET failed_repos = (SELECT COUNT(*) FROM backfill_repos r WHERE r.job_id = backfill_jobs.id AND r.status = 'failed')
    WHERE processed_repos IS NOT NULL;
