-- Service entries: the services the instance's DID document lists, each
-- bound to the XRPC methods (lexicon NSIDs) it grants access to, with the
-- caller DIDs an `allowlist` entry admits.
CREATE TABLE service_entries (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    fragment     TEXT NOT NULL UNIQUE,
    service_type TEXT NOT NULL,
    access_mode  TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);

CREATE TABLE service_entry_methods (
    entry_id   INTEGER NOT NULL REFERENCES service_entries (id) ON DELETE CASCADE,
    nsid       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (entry_id, nsid)
);
-- The entries of a method, read for every proxied XRPC call.
CREATE INDEX service_entry_methods_nsid ON service_entry_methods (nsid);

CREATE TABLE service_entry_allowlist (
    entry_id   INTEGER NOT NULL REFERENCES service_entries (id) ON DELETE CASCADE,
    did        TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (entry_id, did)
);
