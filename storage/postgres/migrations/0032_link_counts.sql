-- Counts of the link index: the links of each target and source, kept by
-- statement triggers on record_links whatever writes or removes a link
-- (the writer, the background pass, the records' own triggers), one
-- upsert per statement over its transition table. A backlink count and
-- the total of a page read one row instead of counting the links. A count
-- that falls to zero goes. The functions run with their owner's rights,
-- as record_links_forget does.
CREATE TABLE link_counts (
    target  TEXT COLLATE "C" NOT NULL,
    source  TEXT COLLATE "C" NOT NULL,
    records BIGINT NOT NULL,
    PRIMARY KEY (target, source)
);
INSERT INTO link_counts (target, source, records)
    SELECT target, source, COUNT(*) FROM record_links GROUP BY target, source;

CREATE FUNCTION link_counts_add() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO link_counts AS c (target, source, records)
        SELECT target, source, COUNT(*) FROM added_links GROUP BY target, source ORDER BY target, source
        ON CONFLICT (target, source) DO UPDATE SET records = c.records + EXCLUDED.records;
    RETURN NULL;
END;
$$;
CREATE FUNCTION link_counts_remove() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE link_counts c SET records = c.records - gone.n
    FROM (SELECT target, source, COUNT(*) AS n FROM removed_links GROUP BY target, source) AS gone
    WHERE c.target = gone.target AND c.source = gone.source;
    DELETE FROM link_counts c USING (SELECT DISTINCT target, source FROM removed_links) AS gone
    WHERE c.target = gone.target AND c.source = gone.source AND c.records <= 0;
    RETURN NULL;
END;
$$;
CREATE TRIGGER link_counts_add AFTER INSERT ON record_links
    REFERENCING NEW TABLE AS added_links FOR EACH STATEMENT EXECUTE FUNCTION link_counts_add();
CREATE TRIGGER link_counts_remove AFTER DELETE ON record_links
    REFERENCING OLD TABLE AS removed_links FOR EACH STATEMENT EXECUTE FUNCTION link_counts_remove();

-- A record's links are found for removal by the record's creation time and
-- URI: a key that grows with the records written live, so that the index
-- takes its entries at its end.
CREATE INDEX record_links_record ON record_links (created_at, uri);
DROP INDEX record_links_uri;
CREATE OR REPLACE FUNCTION record_links_forget() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    DELETE FROM record_links WHERE created_at = OLD.created_at AND uri = OLD.uri;
    RETURN NULL;
END;
$$;
