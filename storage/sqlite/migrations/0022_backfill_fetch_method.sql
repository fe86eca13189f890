-- How a backfill fetched each repository: 'car' (com.atproto.sync.getRepo,
-- verified) or 'list_records' (com.atproto.repo.listRecords, the fallback
-- for a PDS that refuses getRepo). NULL until fetched.
ALTER TABLE backfill_repos ADD COLUMN fetch_method TEXT;
