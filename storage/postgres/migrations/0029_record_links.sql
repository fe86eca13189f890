-- The link index: one row per link target, source (collection:path) and
-- linking record (storage.ExtractLinks). The primary key serves backlink
-- pages newest first and their counts; record_links_did the distinct
-- accounts; record_links_uri the removal of a record's links.
CREATE TABLE record_links (
    target     TEXT COLLATE "C" NOT NULL,
    source     TEXT COLLATE "C" NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    uri        TEXT COLLATE "C" NOT NULL,
    did        TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (target, source, created_at, uri)
);
CREATE INDEX record_links_did ON record_links (target, source, did);
CREATE INDEX record_links_uri ON record_links (uri);

-- A record's links go with it, whatever removes or changes it (a batch, a
-- deletion by account or collection, a script's raw write): the writer
-- then stores the new version's links in the same transaction. The
-- function runs with its owner's rights, so that a script's raw write
-- (whose role may change only the records table) keeps the index too; its
-- search path is the one it was created under.
CREATE FUNCTION record_links_forget() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    DELETE FROM record_links WHERE uri = OLD.uri;
    RETURN NULL;
END;
$$;
CREATE TRIGGER record_links_delete AFTER DELETE ON records
    FOR EACH ROW EXECUTE FUNCTION record_links_forget();
CREATE TRIGGER record_links_update AFTER UPDATE OF record, created_at, uri ON records
    FOR EACH ROW WHEN (OLD.record IS DISTINCT FROM NEW.record OR OLD.created_at IS DISTINCT FROM NEW.created_at
        OR OLD.uri IS DISTINCT FROM NEW.uri)
    EXECUTE FUNCTION record_links_forget();

-- The background pass indexing the records stored before the index
-- existed walks them by URI; after_uri is where it stopped.
CREATE TABLE link_index_state (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    after_uri TEXT COLLATE "C" NOT NULL DEFAULT '',
    scanned   BIGINT NOT NULL DEFAULT 0,
    done      BOOLEAN NOT NULL
);
INSERT INTO link_index_state (id, done) SELECT 1, NOT EXISTS (SELECT 1 FROM records);
