-- Declared field indexes (storage.FieldIndex): per collection, a field
-- path in the filter syntax (path) and a kind ('value' or 'text').
-- json_path is the path in PostgreSQL's form ({"a","0"}); value_sql the
-- expressions of a value entry's grp, num and str over the column record,
-- with the path as literals (sqlstore's fieldValueSQL: the filter's own
-- expressions). state is 'building', 'ready', 'failed' or 'dropping'
-- (dropped: the build deletes its entries, then the row). The build walks
-- the collection newest first and keeps its position (pos_created,
-- pos_uri; NULL before the first chunk). IDs are never reused, so that
-- entries of a dropped index are never taken for a later one's.
CREATE TABLE field_indexes (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    collection  TEXT NOT NULL,
    path        TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('value', 'text')),
    json_path   TEXT NOT NULL,
    value_sql   TEXT NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('building', 'ready', 'failed', 'dropping')),
    done        BIGINT NOT NULL DEFAULT 0,
    total       BIGINT NOT NULL DEFAULT 0,
    error       TEXT NOT NULL DEFAULT '',
    pos_created TIMESTAMPTZ,
    pos_uri     TEXT COLLATE "C" NOT NULL DEFAULT '',
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX field_indexes_declared ON field_indexes (collection, path, kind) WHERE state <> 'dropping';
CREATE INDEX field_indexes_collection ON field_indexes (collection, kind);

-- The entries of value indexes: one per index and record of its
-- collection. grp is the sort group of the field (0 number, 1 string, 2
-- boolean, 3 absent, null, object or array), num the number (a boolean as
-- 1 or 0), str the string (bytewise, as the filter compares), rec_created
-- the record's created_at. The indexes serve an equality or range
-- condition in creation order (field_index_numbers, field_index_strings)
-- and the field sort (field_index_number_order for groups 0, 2 and 3,
-- whose str is NULL; field_index_string_order for group 1).
CREATE TABLE field_index_values (
    index_id    BIGINT NOT NULL,
    rec_uri     TEXT COLLATE "C" NOT NULL,
    grp         SMALLINT NOT NULL,
    num         NUMERIC,
    str         TEXT COLLATE "C",
    rec_created TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (index_id, rec_uri)
);
CREATE INDEX field_index_numbers ON field_index_values (index_id, grp, num, rec_created, rec_uri) WHERE num IS NOT NULL;
CREATE INDEX field_index_strings ON field_index_values (index_id, grp, str, rec_created, rec_uri) WHERE str IS NOT NULL;
CREATE INDEX field_index_number_order ON field_index_values (index_id, grp, num, rec_uri) WHERE str IS NULL;
CREATE INDEX field_index_string_order ON field_index_values (index_id, grp, str, rec_uri) WHERE str IS NOT NULL;

-- Every write of records keeps the entries of its collection's value
-- indexes, in the same transaction, whatever writes it (ApplyBatch, a
-- script's raw SQL under its restricted role: hence SECURITY DEFINER, a
-- delete by DID). Statement triggers with transition tables: one call per
-- statement, a batch's rows in one INSERT ... SELECT per index, and
-- nothing but one probe of field_indexes when the collection has none.
-- value_sql is written by Lexview only (never by scripts).
CREATE FUNCTION field_index_maintain() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    fi RECORD;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM field_indexes WHERE kind = 'value') THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' THEN
        DELETE FROM field_index_values v USING old_rows o, field_indexes f
         WHERE f.collection = o.collection AND v.index_id = f.id AND v.rec_uri = o.uri;
        RETURN NULL;
    END IF;
    IF TG_OP = 'UPDATE' THEN
        -- Rows that moved to another URI or collection leave their entries.
        DELETE FROM field_index_values v USING old_rows o, field_indexes f
         WHERE f.collection = o.collection AND v.index_id = f.id AND v.rec_uri = o.uri
           AND NOT EXISTS (SELECT 1 FROM new_rows n WHERE n.uri = o.uri AND n.collection = o.collection);
    END IF;
    FOR fi IN SELECT f.id, f.collection, f.value_sql FROM field_indexes f
               WHERE f.kind = 'value' AND f.state <> 'dropping'
                 AND f.collection IN (SELECT n.collection FROM new_rows n) LOOP
        EXECUTE 'INSERT INTO field_index_values (index_id, rec_uri, grp, num, str, rec_created)
                 SELECT $1, uri, ' || fi.value_sql || ', created_at FROM new_rows WHERE collection = $2
                 ON CONFLICT (index_id, rec_uri) DO UPDATE
                    SET grp = excluded.grp, num = excluded.num, str = excluded.str, rec_created = excluded.rec_created
                  WHERE (field_index_values.grp, field_index_values.num, field_index_values.str, field_index_values.rec_created)
                        IS DISTINCT FROM (excluded.grp, excluded.num, excluded.str, excluded.rec_created)'
            USING fi.id, fi.collection;
    END LOOP;
    RETURN NULL;
END $$;

CREATE TRIGGER records_field_index_insert AFTER INSERT ON records
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION field_index_maintain();
CREATE TRIGGER records_field_index_update AFTER UPDATE ON records
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION field_index_maintain();
CREATE TRIGGER records_field_index_delete AFTER DELETE ON records
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION field_index_maintain();
