-- The link index, narrower and cheaper to write. Each target and source
-- linked to is stored once, in link_targets, with an integer id and the
-- number of links to it; a link row names its target by that id.
--
-- Why: a link used to be three entries keyed by random text (target,
-- source, URI, ~240 bytes each) in three B-trees, and every entry of a
-- batch dirtied its own 4 KiB page of the WAL. Now a link's entries are
-- keyed by its target's id, which a new target takes at the end of the
-- index and a popular one keeps on a hot page, and by its record's
-- creation time, which grows with live records: only link_targets_key
-- takes a random entry, and only for a target seen for the first time.
--
-- The writer (Dialect.InsertLinks) adds to the counts the links it
-- stored; the trigger on record_links takes them off as links go,
-- whatever removes them. A target whose count falls to zero keeps its row
-- (and id).
CREATE TABLE link_targets (
    id      INTEGER PRIMARY KEY,
    target  TEXT NOT NULL,
    source  TEXT NOT NULL,
    records INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX link_targets_key ON link_targets (target, source);
INSERT INTO link_targets (target, source, records)
    SELECT target, source, COUNT(*) FROM record_links GROUP BY target, source;

CREATE TABLE record_links_by_target (
    tid        INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    uri        TEXT NOT NULL,
    did        TEXT NOT NULL,
    PRIMARY KEY (tid, created_at, uri)
) WITHOUT ROWID;
INSERT INTO record_links_by_target (tid, created_at, uri, did)
    SELECT t.id, l.created_at, l.uri, l.did FROM record_links l
    JOIN link_targets t ON t.target = l.target AND t.source = l.source;
DROP TRIGGER record_links_delete;
DROP TRIGGER record_links_update;
DROP TABLE record_links;
ALTER TABLE record_links_by_target RENAME TO record_links;
-- The linking accounts of a target, and a record's links for removal.
CREATE INDEX record_links_did ON record_links (tid, did);
CREATE INDEX record_links_record ON record_links (created_at, uri);

CREATE TRIGGER record_links_delete AFTER DELETE ON records BEGIN
    DELETE FROM record_links WHERE created_at = OLD.created_at AND uri = OLD.uri;
END;
CREATE TRIGGER record_links_update AFTER UPDATE OF record, created_at, uri ON records
WHEN OLD.record IS NOT NEW.record OR OLD.created_at IS NOT NEW.created_at OR OLD.uri IS NOT NEW.uri BEGIN
    DELETE FROM record_links WHERE created_at = OLD.created_at AND uri = OLD.uri;
END;
CREATE TRIGGER link_targets_count AFTER DELETE ON record_links BEGIN
    UPDATE link_targets SET records = records - 1 WHERE id = OLD.tid;
END;
