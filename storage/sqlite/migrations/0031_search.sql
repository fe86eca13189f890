-- Full-text search over the declared text indexes (storage.SearchStore,
-- field_indexes rows of kind 'text'). FTS4, not FTS5: mattn/go-sqlite3
-- compiles FTS5 only under a build tag (sqlite_fts5) that every user of
-- the library would have to pass, FTS3/4 always; BM25 is computed in Go
-- from matchinfo (sqlstore.SearchRank, registered on the read
-- connections). See docs/queries.md, section Search.
--
-- search_fields gives each text index a slot, 0 to 3, unique within its
-- collection: the column of search_fts (f0 to f3) that holds its text.
-- json_path is the index's path in SQLite's form (field_indexes.json_path).
-- The slot of a dropped index stays taken until the build has cleared its
-- column from the collection's rows (purge_created, purge_uri: where that
-- stopped), then goes with the field_indexes row.
CREATE TABLE search_fields (
    index_id      INTEGER PRIMARY KEY REFERENCES field_indexes (id) ON DELETE CASCADE,
    collection    TEXT NOT NULL,
    slot          INTEGER NOT NULL CHECK (slot BETWEEN 0 AND 3),
    json_path     TEXT NOT NULL,
    config        TEXT NOT NULL DEFAULT '',
    purge_created INTEGER,
    purge_uri     TEXT NOT NULL DEFAULT '',
    UNIQUE (collection, slot)
);

-- One search document per record of a collection with text indexes:
-- search_docs numbers it (the FTS docid; the records table's own rowid
-- may change in a VACUUM) and holds what a search filters the matches by
-- before it ranks them, search_fts holds its text, one column per slot.
-- unicode61 folds case and, with remove_diacritics=2, accents.
CREATE TABLE search_docs (
    docid      INTEGER PRIMARY KEY,
    uri        TEXT NOT NULL UNIQUE,
    collection TEXT NOT NULL,
    did        TEXT NOT NULL
);
CREATE VIRTUAL TABLE search_fts USING fts4(f0, f1, f2, f3, tokenize=unicode61 "remove_diacritics=2");

-- The text of each slot of a record: the string at the index's path, or
-- the string elements of the array there, joined by newlines and cut at
-- storage.MaxSearchFieldText characters. Only the records of collections
-- with a text index not being dropped, and only those indexes' slots. The
-- triggers and the build (sqlstore's refreshSearchDocs) both read it.
CREATE VIEW search_text AS
SELECT r.uri AS uri, r.collection AS collection, r.did AS did, r.created_at AS created_at,
    (SELECT substr(group_concat(j.value, char(10)), 1, 65536)
       FROM search_fields s JOIN field_indexes fi ON fi.id = s.index_id AND fi.state <> 'dropping',
            json_each(r.record, s.json_path) j
      WHERE s.collection = r.collection AND s.slot = 0 AND j.type = 'text' AND (j.key IS NULL OR typeof(j.key) = 'integer')) AS f0,
    (SELECT substr(group_concat(j.value, char(10)), 1, 65536)
       FROM search_fields s JOIN field_indexes fi ON fi.id = s.index_id AND fi.state <> 'dropping',
            json_each(r.record, s.json_path) j
      WHERE s.collection = r.collection AND s.slot = 1 AND j.type = 'text' AND (j.key IS NULL OR typeof(j.key) = 'integer')) AS f1,
    (SELECT substr(group_concat(j.value, char(10)), 1, 65536)
       FROM search_fields s JOIN field_indexes fi ON fi.id = s.index_id AND fi.state <> 'dropping',
            json_each(r.record, s.json_path) j
      WHERE s.collection = r.collection AND s.slot = 2 AND j.type = 'text' AND (j.key IS NULL OR typeof(j.key) = 'integer')) AS f2,
    (SELECT substr(group_concat(j.value, char(10)), 1, 65536)
       FROM search_fields s JOIN field_indexes fi ON fi.id = s.index_id AND fi.state <> 'dropping',
            json_each(r.record, s.json_path) j
      WHERE s.collection = r.collection AND s.slot = 3 AND j.type = 'text' AND (j.key IS NULL OR typeof(j.key) = 'integer')) AS f3
  FROM records r
 WHERE EXISTS (SELECT 1 FROM search_fields s JOIN field_indexes fi ON fi.id = s.index_id
                WHERE s.collection = r.collection AND fi.state <> 'dropping');

-- Every write of records keeps its search document, in the same
-- transaction, whatever writes it (ApplyBatch, a script's raw SQL, a
-- delete by account or collection). The insert trigger first drops a
-- document left by a row that INSERT OR REPLACE replaced (which fires no
-- delete trigger). A record has a document only while its collection has
-- a search_fields row, so a write of a collection without one costs a
-- lookup of search_fields.
CREATE TRIGGER search_records_insert AFTER INSERT ON records
WHEN EXISTS (SELECT 1 FROM search_fields WHERE collection = NEW.collection)
BEGIN
    DELETE FROM search_fts WHERE docid = (SELECT docid FROM search_docs WHERE uri = NEW.uri);
    DELETE FROM search_docs WHERE uri = NEW.uri;
    INSERT INTO search_docs (uri, collection, did) SELECT uri, collection, did FROM search_text WHERE uri = NEW.uri;
    INSERT INTO search_fts (docid, f0, f1, f2, f3)
    SELECT d.docid, t.f0, t.f1, t.f2, t.f3 FROM search_text t JOIN search_docs d ON d.uri = t.uri WHERE t.uri = NEW.uri;
END;

CREATE TRIGGER search_records_update AFTER UPDATE OF uri, did, collection, record ON records
WHEN (OLD.uri IS NOT NEW.uri OR OLD.did IS NOT NEW.did OR OLD.collection IS NOT NEW.collection OR OLD.record IS NOT NEW.record)
    AND EXISTS (SELECT 1 FROM search_fields WHERE collection IN (OLD.collection, NEW.collection))
BEGIN
    DELETE FROM search_fts WHERE docid = (SELECT docid FROM search_docs WHERE uri = OLD.uri);
    DELETE FROM search_docs WHERE uri = OLD.uri;
    INSERT INTO search_docs (uri, collection, did) SELECT uri, collection, did FROM search_text WHERE uri = NEW.uri;
    INSERT INTO search_fts (docid, f0, f1, f2, f3)
    SELECT d.docid, t.f0, t.f1, t.f2, t.f3 FROM search_text t JOIN search_docs d ON d.uri = t.uri WHERE t.uri = NEW.uri;
END;

CREATE TRIGGER search_records_delete AFTER DELETE ON records
WHEN EXISTS (SELECT 1 FROM search_fields WHERE collection = OLD.collection)
BEGIN
    DELETE FROM search_fts WHERE docid = (SELECT docid FROM search_docs WHERE uri = OLD.uri);
    DELETE FROM search_docs WHERE uri = OLD.uri;
END;
