-- Declared field indexes (storage.FieldIndex): per collection, a field
-- path in the filter syntax (path) and a kind ('value' or 'text'). json_path
-- is the path in SQLite's form ($."a"[0]); value_sql the expressions of a
-- value entry's grp, num and str over the column record, with the path as
-- a literal (sqlstore's fieldValueSQL). state is 'building', 'ready',
-- 'failed' or 'dropping' (dropped: the build deletes its entries, then the
-- row). The build walks the collection newest first and keeps its position
-- (pos_created, pos_uri; NULL before the first chunk). IDs are never
-- reused (AUTOINCREMENT), so that entries of a dropped index are never
-- taken for a later one's.
CREATE TABLE field_indexes (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    collection  TEXT NOT NULL,
    path        TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('value', 'text')),
    json_path   TEXT NOT NULL,
    value_sql   TEXT NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('building', 'ready', 'failed', 'dropping')),
    done        INTEGER NOT NULL DEFAULT 0,
    total       INTEGER NOT NULL DEFAULT 0,
    error       TEXT NOT NULL DEFAULT '',
    pos_created INTEGER,
    pos_uri     TEXT NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE UNIQUE INDEX field_indexes_declared ON field_indexes (collection, path, kind) WHERE state <> 'dropping';
CREATE INDEX field_indexes_collection ON field_indexes (collection, kind);

-- The entries of value indexes: one per index and record of its
-- collection. grp is the sort group of the field (0 number, 1 string, 2
-- boolean, 3 absent, null, object or array), num the number (a boolean as
-- 1 or 0; no declared type, so that integers and reals stay as the JSON
-- functions return them), str the string; rec_created the record's
-- created_at. The indexes serve an equality or range condition in
-- creation order (field_index_numbers, field_index_strings) and the field
-- sort (field_index_number_order for groups 0, 2 and 3, whose str is NULL;
-- field_index_string_order for group 1).
CREATE TABLE field_index_values (
    index_id    INTEGER NOT NULL,
    rec_uri     TEXT NOT NULL,
    grp         INTEGER NOT NULL,
    num,
    str         TEXT,
    rec_created INTEGER NOT NULL,
    PRIMARY KEY (index_id, rec_uri)
) WITHOUT ROWID;
CREATE INDEX field_index_numbers ON field_index_values (index_id, grp, num, rec_created, rec_uri) WHERE num IS NOT NULL;
CREATE INDEX field_index_strings ON field_index_values (index_id, grp, str, rec_created, rec_uri) WHERE str IS NOT NULL;
CREATE INDEX field_index_number_order ON field_index_values (index_id, grp, num, rec_uri) WHERE str IS NULL;
CREATE INDEX field_index_string_order ON field_index_values (index_id, grp, str, rec_uri) WHERE str IS NOT NULL;

-- Every write of records keeps the entries of its collection's value
-- indexes, in the same transaction, whatever writes it (ApplyBatch, a
-- script's raw SQL, a delete by DID). The expressions are sqlstore's
-- FieldValueTriggerSQL (TestFieldIndexTriggerSQL checks them): the filter's
-- own, with the path read from field_indexes.json_path. An upsert, not an
-- insert: INSERT OR REPLACE into records deletes the row it replaces
-- without firing the delete trigger.
CREATE TRIGGER records_field_index_insert AFTER INSERT ON records
BEGIN
    INSERT INTO field_index_values (index_id, rec_uri, grp, num, str, rec_created)
    SELECT fi.id, r.uri,
        CASE WHEN (CASE WHEN json_type(record, fi.json_path) IN ('integer', 'real') THEN json_extract(record, fi.json_path) END) IS NOT NULL THEN 0 WHEN (CASE WHEN json_type(record, fi.json_path) = 'text' THEN json_extract(record, fi.json_path) END) IS NOT NULL THEN 1 WHEN (CASE json_type(record, fi.json_path) WHEN 'true' THEN 1 WHEN 'false' THEN 0 END) IS NOT NULL THEN 2 ELSE 3 END, COALESCE((CASE WHEN json_type(record, fi.json_path) IN ('integer', 'real') THEN json_extract(record, fi.json_path) END), CASE WHEN (CASE json_type(record, fi.json_path) WHEN 'true' THEN 1 WHEN 'false' THEN 0 END) THEN 1 WHEN NOT (CASE json_type(record, fi.json_path) WHEN 'true' THEN 1 WHEN 'false' THEN 0 END) THEN 0 END), (CASE WHEN json_type(record, fi.json_path) = 'text' THEN json_extract(record, fi.json_path) END),
        r.created_at
      FROM (SELECT new.uri AS uri, new.record AS record, new.created_at AS created_at) AS r
      JOIN field_indexes AS fi ON fi.collection = new.collection AND fi.kind = 'value' AND fi.state <> 'dropping'
     WHERE true
    ON CONFLICT (index_id, rec_uri) DO UPDATE
       SET grp = excluded.grp, num = excluded.num, str = excluded.str, rec_created = excluded.rec_created
     WHERE grp IS NOT excluded.grp OR num IS NOT excluded.num OR str IS NOT excluded.str
        OR rec_created IS NOT excluded.rec_created;
END;

CREATE TRIGGER records_field_index_update AFTER UPDATE OF uri, collection, record, created_at ON records
BEGIN
    DELETE FROM field_index_values
     WHERE rec_uri = old.uri AND (old.uri <> new.uri OR old.collection <> new.collection)
       AND index_id IN (SELECT id FROM field_indexes WHERE collection = old.collection);
    INSERT INTO field_index_values (index_id, rec_uri, grp, num, str, rec_created)
    SELECT fi.id, r.uri,
        CASE WHEN (CASE WHEN json_type(record, fi.json_path) IN ('integer', 'real') THEN json_extract(record, fi.json_path) END) IS NOT NULL THEN 0 WHEN (CASE WHEN json_type(record, fi.json_path) = 'text' THEN json_extract(record, fi.json_path) END) IS NOT NULL THEN 1 WHEN (CASE json_type(record, fi.json_path) WHEN 'true' THEN 1 WHEN 'false' THEN 0 END) IS NOT NULL THEN 2 ELSE 3 END, COALESCE((CASE WHEN json_type(record, fi.json_path) IN ('integer', 'real') THEN json_extract(record, fi.json_path) END), CASE WHEN (CASE json_type(record, fi.json_path) WHEN 'true' THEN 1 WHEN 'false' THEN 0 END) THEN 1 WHEN NOT (CASE json_type(record, fi.json_path) WHEN 'true' THEN 1 WHEN 'false' THEN 0 END) THEN 0 END), (CASE WHEN json_type(record, fi.json_path) = 'text' THEN json_extract(record, fi.json_path) END),
        r.created_at
      FROM (SELECT new.uri AS uri, new.record AS record, new.created_at AS created_at) AS r
      JOIN field_indexes AS fi ON fi.collection = new.collection AND fi.kind = 'value' AND fi.state <> 'dropping'
     WHERE true
    ON CONFLICT (index_id, rec_uri) DO UPDATE
       SET grp = excluded.grp, num = excluded.num, str = excluded.str, rec_created = excluded.rec_created
     WHERE grp IS NOT excluded.grp OR num IS NOT excluded.num OR str IS NOT excluded.str
        OR rec_created IS NOT excluded.rec_created;
END;

CREATE TRIGGER records_field_index_delete AFTER DELETE ON records
BEGIN
    DELETE FROM field_index_values
     WHERE rec_uri = old.uri AND index_id IN (SELECT id FROM field_indexes WHERE collection = old.collection);
END;
