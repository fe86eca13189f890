-- Counts of the link index: the links of each target and source, kept by
-- triggers on record_links whatever writes or removes a link (the writer,
-- the background pass, the records' own triggers). A backlink count and
-- the total of a page read one row instead of counting the links. A count
-- that falls to zero goes.
CREATE TABLE link_counts (
    target  TEXT NOT NULL,
    source  TEXT NOT NULL,
    records INTEGER NOT NULL,
    PRIMARY KEY (target, source)
) WITHOUT ROWID;
INSERT INTO link_counts (target, source, records)
    SELECT target, source, COUNT(*) FROM record_links GROUP BY target, source;
CREATE TRIGGER link_counts_add AFTER INSERT ON record_links BEGIN
    INSERT INTO link_counts (target, source, records) VALUES (NEW.target, NEW.source, 1)
        ON CONFLICT (target, source) DO UPDATE SET records = records + 1;
END;
CREATE TRIGGER link_counts_remove AFTER DELETE ON record_links BEGIN
    UPDATE link_counts SET records = records - 1 WHERE target = OLD.target AND source = OLD.source;
    DELETE FROM link_counts WHERE target = OLD.target AND source = OLD.source AND records <= 0;
END;

-- A record's links are found for removal by the record's creation time and
-- URI: a key that grows with the records written live, so that the index
-- takes its entries at its end instead of at a random page (the URI index
-- it replaces cost every link a random page of the WAL).
CREATE INDEX record_links_record ON record_links (created_at, uri);
DROP TRIGGER record_links_delete;
DROP TRIGGER record_links_update;
DROP INDEX record_links_uri;
CREATE TRIGGER record_links_delete AFTER DELETE ON records BEGIN
    DELETE FROM record_links WHERE created_at = OLD.created_at AND uri = OLD.uri;
END;
CREATE TRIGGER record_links_update AFTER UPDATE OF record, created_at, uri ON records
WHEN OLD.record IS NOT NEW.record OR OLD.created_at IS NOT NEW.created_at OR OLD.uri IS NOT NEW.uri BEGIN
    DELETE FROM record_links WHERE created_at = OLD.created_at AND uri = OLD.uri;
END;
