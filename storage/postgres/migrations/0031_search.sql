-- Full-text search over the declared text indexes (storage.SearchStore,
-- field_indexes rows of kind 'text'). See docs/queries.md, section Search.
--
-- search_fields gives each text index a slot, 0 to 3, unique within its
-- collection: the tsvector weight label ('A' to 'D') its words carry in
-- the record's search document, so that a search can name the fields it
-- looks in. json_path is the index's path in PostgreSQL's form
-- (field_indexes.json_path, {"a","0"}); config the text-search
-- configuration (the setting search.text_config when the index was
-- declared). The slot of a dropped index stays taken until the build has
-- cleared its words from the collection's documents (purge_created,
-- purge_uri: where that stopped), then goes with the field_indexes row.
CREATE TABLE search_fields (
    index_id      BIGINT PRIMARY KEY REFERENCES field_indexes (id) ON DELETE CASCADE,
    collection    TEXT NOT NULL,
    slot          SMALLINT NOT NULL CHECK (slot BETWEEN 0 AND 3),
    json_path     TEXT NOT NULL,
    config        TEXT NOT NULL,
    purge_created TIMESTAMPTZ,
    purge_uri     TEXT COLLATE "C" NOT NULL DEFAULT '',
    UNIQUE (collection, slot)
);

-- One search document per record of a collection with text indexes.
CREATE TABLE search_docs (
    uri        TEXT COLLATE "C" PRIMARY KEY,
    collection TEXT NOT NULL,
    did        TEXT NOT NULL,
    doc        tsvector NOT NULL
);
CREATE INDEX search_docs_doc ON search_docs USING gin (doc);

-- The search document of a record: for each text index of its
-- collection not being dropped, the string at the index's path, or the
-- string elements of the array there, joined by newlines, cut at
-- storage.MaxSearchFieldText characters, parsed with the index's
-- configuration and labelled with its slot's weight.
CREATE FUNCTION search_doc(coll text, rec jsonb) RETURNS tsvector
LANGUAGE plpgsql STABLE SET search_path FROM CURRENT AS $$
DECLARE
    f   RECORD;
    txt text;
    doc tsvector := ''::tsvector;
BEGIN
    FOR f IN SELECT s.slot, s.config, s.json_path::text[] AS path
               FROM search_fields s JOIN field_indexes fi ON fi.id = s.index_id
              WHERE s.collection = coll AND fi.state <> 'dropping' ORDER BY s.slot LOOP
        SELECT string_agg(e #>> '{}', E'\n') INTO txt
          FROM jsonb_array_elements(CASE jsonb_typeof(rec #> f.path)
                   WHEN 'array' THEN rec #> f.path
                   WHEN 'string' THEN jsonb_build_array(rec #> f.path)
                   ELSE '[]'::jsonb END) AS e
         WHERE jsonb_typeof(e) = 'string';
        IF txt IS NOT NULL THEN
            doc := doc || setweight(to_tsvector(f.config::regconfig, left(txt, 65536)), substr('ABCD', f.slot + 1, 1)::"char");
        END IF;
    END LOOP;
    RETURN doc;
END $$;

-- The collections whose records have search documents: those with a
-- text index not being dropped.
CREATE VIEW search_live AS
SELECT DISTINCT s.collection FROM search_fields s JOIN field_indexes fi ON fi.id = s.index_id WHERE fi.state <> 'dropping';

-- Every write of records keeps its search document, in the same
-- transaction, whatever writes it (ApplyBatch, a script's raw SQL under
-- its restricted role: hence SECURITY DEFINER, a delete by account or
-- collection). Statement triggers with transition tables: one call per
-- statement, and nothing but a probe of search_fields when no collection
-- has a text index. A row updated without a change to what its document
-- is made of keeps it; a changed one gets a new one. A record has a
-- document only while its collection has a search_fields row (the build
-- deletes the documents before the last one goes), so the delete needs
-- nothing when there is none.
CREATE FUNCTION search_maintain() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM search_fields) THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' THEN
        DELETE FROM search_docs d USING old_rows o WHERE d.uri = o.uri;
        RETURN NULL;
    END IF;
    IF TG_OP = 'UPDATE' THEN
        DELETE FROM search_docs d USING old_rows o
         WHERE d.uri = o.uri
           AND NOT EXISTS (SELECT 1 FROM new_rows n WHERE n.uri = o.uri AND n.collection = o.collection
                             AND n.did = o.did AND n.record = o.record);
        INSERT INTO search_docs (uri, collection, did, doc)
        SELECT n.uri, n.collection, n.did, search_doc(n.collection, n.record) FROM new_rows n
         WHERE n.collection IN (SELECT collection FROM search_live)
           AND NOT EXISTS (SELECT 1 FROM old_rows o WHERE o.uri = n.uri AND o.collection = n.collection
                             AND o.did = n.did AND o.record = n.record)
        ON CONFLICT (uri) DO UPDATE SET collection = excluded.collection, did = excluded.did, doc = excluded.doc;
        RETURN NULL;
    END IF;
    INSERT INTO search_docs (uri, collection, did, doc)
    SELECT n.uri, n.collection, n.did, search_doc(n.collection, n.record) FROM new_rows n
     WHERE n.collection IN (SELECT collection FROM search_live)
    ON CONFLICT (uri) DO UPDATE SET collection = excluded.collection, did = excluded.did, doc = excluded.doc;
    RETURN NULL;
END $$;

CREATE TRIGGER search_records_insert AFTER INSERT ON records
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION search_maintain();
CREATE TRIGGER search_records_update AFTER UPDATE ON records
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION search_maintain();
CREATE TRIGGER search_records_delete AFTER DELETE ON records
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION search_maintain();
