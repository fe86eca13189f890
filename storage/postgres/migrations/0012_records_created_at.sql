-- Listings order records by creation time: created_at is
-- storage.CreationTime of the record key, value and indexing time (the
-- TID key's time, else a createdAt datetime, else the indexing time, never
-- later than the indexing time), computed in Go by every write. The step
-- computes it the same way for the records stored before; then the listing
-- index moves from indexed_at to created_at. A row that a script's db.raw
-- inserts without created_at gets the epoch (1970): it lists last.
ALTER TABLE records ADD COLUMN created_at TIMESTAMPTZ NOT NULL DEFAULT 'epoch';
-- lexview:step fill-created-at
CREATE INDEX records_collection_created ON records (collection, created_at DESC, uri DESC);
DROP INDEX IF EXISTS records_collection_newest;
