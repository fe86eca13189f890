-- One repository's records are listed, deleted and queried through the
-- primary key (their AT URIs share the prefix at://DID/COLLECTION/), in
-- record-key order. The (collection, did, ...) index cost every write a
-- random B-tree insert and halved sustained ingestion on large databases.
DROP INDEX IF EXISTS records_collection_did_newest;
