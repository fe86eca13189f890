-- The link index: one row per link target, source (collection:path) and
-- linking record (storage.ExtractLinks). The primary key serves backlink
-- pages newest first and their counts; record_links_did the distinct
-- accounts; record_links_uri the removal of a record's links.
CREATE TABLE record_links (
    target     TEXT NOT NULL,
    source     TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    uri        TEXT NOT NULL,
    did        TEXT NOT NULL,
    PRIMARY KEY (target, source, created_at, uri)
) WITHOUT ROWID;
CREATE INDEX record_links_did ON record_links (target, source, did);
CREATE INDEX record_links_uri ON record_links (uri);

-- A record's links go with it, whatever removes or changes it (a batch, a
-- deletion by account or collection, a script's raw write): the writer
-- then stores the new version's links in the same transaction.
CREATE TRIGGER record_links_delete AFTER DELETE ON records BEGIN
    DELETE FROM record_links WHERE uri = OLD.uri;
END;
CREATE TRIGGER record_links_update AFTER UPDATE OF record, created_at, uri ON records
WHEN OLD.record IS NOT NEW.record OR OLD.created_at IS NOT NEW.created_at OR OLD.uri IS NOT NEW.uri BEGIN
    DELETE FROM record_links WHERE uri = OLD.uri;
END;

-- The background pass indexing the records stored before the index
-- existed walks them by URI; after_uri is where it stopped.
CREATE TABLE link_index_state (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    after_uri TEXT NOT NULL DEFAULT '',
    scanned   INTEGER NOT NULL DEFAULT 0,
    done      BOOLEAN NOT NULL
);
INSERT INTO link_index_state (id, done) SELECT 1, NOT EXISTS (SELECT 1 FROM records);
