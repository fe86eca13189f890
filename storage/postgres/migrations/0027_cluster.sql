-- Coordination of instances sharing the database: the leader's lease, the
-- instances' heartbeats, and notifications of configuration changes.
-- Times are milliseconds since the Unix epoch by the database's clock, so
-- that the instances' clocks do not have to agree.
CREATE TABLE leases (
    name        TEXT PRIMARY KEY,
    holder      TEXT NOT NULL,
    token       BIGINT NOT NULL,
    expires_ms  BIGINT NOT NULL,
    acquired_ms BIGINT NOT NULL
);

CREATE TABLE instances (
    id         TEXT PRIMARY KEY,
    started_ms BIGINT NOT NULL,
    seen_ms    BIGINT NOT NULL,
    info       TEXT NOT NULL
);

-- Every committed change to a table that instances cache is announced on
-- the channel lexview_changes with the table's name as payload (once per
-- table and transaction: PostgreSQL folds identical notifications), to
-- every instance listening, whatever made the change. Tables read on
-- every use (admin keys, sessions) need no notification, and tables
-- written on hot paths (labelers: their cursors) have none.
CREATE FUNCTION lexview_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('lexview_changes', TG_TABLE_NAME);
    RETURN NULL;
END;
$$;

DO $$
DECLARE
    t TEXT;
BEGIN
    FOREACH t IN ARRAY ARRAY[
        'lexicons', 'network_lexicons', 'scripts', 'script_variables', 'settings', 'setting_blobs',
        'api_clients', 'domains', 'verification_methods', 'service_entries', 'service_entry_methods',
        'service_entry_allowlist', 'plugins'
    ] LOOP
        EXECUTE format('CREATE TRIGGER %I AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON %I
            FOR EACH STATEMENT EXECUTE FUNCTION lexview_notify_change()', t || '_notify_change', t);
    END LOOP;
END;
$$;
