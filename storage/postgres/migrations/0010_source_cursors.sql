-- Each event source keeps its cursor under "source:" followed by its name
-- (ingest.CursorKey), so that no source resumes from another's position.
-- The Jetstream cursor was stored as "jetstream": it moves to
-- "source:jetstream", and a running instance resumes where it was.
UPDATE stream_cursors SET name = 'source:jetstream'
 WHERE name = 'jetstream'
   AND NOT EXISTS (SELECT 1 FROM stream_cursors WHERE name = 'source:jetstream');
DELETE FROM stream_cursors WHERE name = 'jetstream';
