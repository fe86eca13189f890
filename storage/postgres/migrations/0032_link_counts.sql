-- The link index, narrower and cheaper to write. Each target and source
-- linked to is stored once, in link_targets, with an integer id and the
-- number of links to it; a link row names its target by that id, so its
-- entries are keyed by an id that a new target takes at the end of the
-- index and by its record's creation time, which grows with live records
-- (see the SQLite migration of the same number for the measurements).
--
-- Counts are kept by statement triggers on record_links over their
-- transition tables, whatever writes or removes a link. A target whose
-- count falls to zero keeps its row (and id): a writer may hold that id.
-- The functions run with their owner's rights, as record_links_forget
-- does, so that a script's raw write keeps the counts too.
CREATE TABLE link_targets (
    id      BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    target  TEXT COLLATE "C" NOT NULL,
    source  TEXT COLLATE "C" NOT NULL,
    records BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT link_targets_key UNIQUE (target, source)
) WITH (fillfactor = 70);
-- Room on every page for the new versions of its rows: a count's update
-- then stays on its page (a heap-only tuple) instead of adding entries to
-- both indexes.
INSERT INTO link_targets (target, source, records)
    SELECT target, source, COUNT(*) FROM record_links GROUP BY target, source ORDER BY target, source;

CREATE TABLE record_links_by_target (
    tid        BIGINT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    uri        TEXT COLLATE "C" NOT NULL,
    did        TEXT COLLATE "C" NOT NULL,
    CONSTRAINT record_links_by_target_pkey PRIMARY KEY (tid, created_at, uri)
);
INSERT INTO record_links_by_target (tid, created_at, uri, did)
    SELECT t.id, l.created_at, l.uri, l.did FROM record_links l
    JOIN link_targets t ON t.target = l.target AND t.source = l.source;
DROP TABLE record_links;
ALTER TABLE record_links_by_target RENAME TO record_links;
ALTER TABLE record_links RENAME CONSTRAINT record_links_by_target_pkey TO record_links_pkey;
-- The linking accounts of a target, and a record's links for removal.
CREATE INDEX record_links_did ON record_links (tid, did);
CREATE INDEX record_links_record ON record_links (created_at, uri);

CREATE OR REPLACE FUNCTION record_links_forget() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    DELETE FROM record_links WHERE created_at = OLD.created_at AND uri = OLD.uri;
    RETURN NULL;
END;
$$;

CREATE FUNCTION link_targets_add() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE link_targets t SET records = t.records + a.n
    FROM (SELECT tid, COUNT(*) AS n FROM added_links GROUP BY tid) AS a
    WHERE t.id = a.tid;
    RETURN NULL;
END;
$$;
CREATE FUNCTION link_targets_remove() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE link_targets t SET records = t.records - r.n
    FROM (SELECT tid, COUNT(*) AS n FROM removed_links GROUP BY tid) AS r
    WHERE t.id = r.tid;
    RETURN NULL;
END;
$$;
CREATE TRIGGER link_targets_add AFTER INSERT ON record_links
    REFERENCING NEW TABLE AS added_links FOR EACH STATEMENT EXECUTE FUNCTION link_targets_add();
CREATE TRIGGER link_targets_remove AFTER DELETE ON record_links
    REFERENCING OLD TABLE AS removed_links FOR EACH STATEMENT EXECUTE FUNCTION link_targets_remove();
