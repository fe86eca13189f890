-- The access token the app registered (and keeps presenting) is kept apart
-- from the PDS tokens Lexview refreshes on its own: its hash authenticates
-- the app's calls, its expiry answers token_expired.
ALTER TABLE device_sessions ADD COLUMN app_token_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE device_sessions ADD COLUMN app_expires_at INTEGER NOT NULL DEFAULT 0;
