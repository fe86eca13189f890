-- Scripts' raw SQL (db.raw) may read only the records table, the record
-- tombstones and the documented views (docs/lua.md); SQLite holds it to
-- that list with an authorizer (storage/sqlite/raw.go). lexicon_info is
-- the lexicons without their scripts, index hooks and documents.
CREATE VIEW lexicon_info AS
    SELECT id, lexicon_type, target_collection, revision, backfill, created_at, updated_at
      FROM lexicons;
