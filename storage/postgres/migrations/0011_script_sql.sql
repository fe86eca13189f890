-- Scripts' raw SQL (db.raw) may read only the records table, the record
-- tombstones and the documented views (docs/lua.md). lexicon_info is the
-- lexicons without their scripts, index hooks and documents.
CREATE VIEW lexicon_info AS
    SELECT id, lexicon_type, target_collection, revision, backfill, created_at, updated_at
      FROM lexicons;

-- The role raw statements run as (SET LOCAL ROLE, storage/postgres/raw.go):
-- it may read those relations and write records, nothing else. Its name is
-- random, so that deployments sharing a server never share it, and kept
-- here so that an operator can create it by hand when the connecting user
-- may not create roles (docs/operations.md).
CREATE TABLE script_sql_role (
    role_name TEXT PRIMARY KEY
);
INSERT INTO script_sql_role (role_name)
    VALUES ('lexview_script_' || replace(gen_random_uuid()::text, '-', ''));

DO $$
DECLARE
    r     text := (SELECT role_name FROM script_sql_role);
    super boolean;
    maker boolean;
BEGIN
    SELECT rolsuper, rolcreaterole INTO super, maker FROM pg_roles WHERE rolname = current_user;
    IF NOT (super OR maker) THEN
        RAISE NOTICE 'lexview: % may not create roles: scripts'' raw SQL is held to its allow-list by the statement guard only; see docs/operations.md to create role %', current_user, r;
        RETURN;
    END IF;
    EXECUTE format('CREATE ROLE %I NOLOGIN', r);
    EXECUTE format('GRANT SELECT ON records, record_tombstones, lexicon_info TO %I', r);
    EXECUTE format('GRANT INSERT, UPDATE, DELETE ON records TO %I', r);
    IF NOT has_schema_privilege(r, current_schema(), 'USAGE') THEN
        EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', current_schema(), r);
    END IF;
    IF NOT super THEN
        EXECUTE format('GRANT %I TO %I WITH INHERIT FALSE, SET TRUE', r, current_user);
    END IF;
END $$;
