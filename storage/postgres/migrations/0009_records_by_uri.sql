-- One repository's records are listed, deleted and queried through the
-- primary key (their AT URIs share the prefix at://DID/COLLECTION/), in
-- record-key order. Prefix ranges and the URI tie-break of listings need
-- byte order, as on SQLite, whatever the database's default collation.
-- Changing the collation rebuilds the indexes on uri.
ALTER TABLE records ALTER COLUMN uri TYPE TEXT COLLATE "C";
DROP INDEX IF EXISTS records_collection_did_newest;
