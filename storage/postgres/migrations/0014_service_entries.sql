-- Service entries: the services the instance's DID document lists, each
-- bound to the XRPC methods (lexicon NSIDs) it grants access to, with the
-- caller DIDs an `allowlist` entry admits.
CREATE TABLE service_entries (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    fragment     TEXT NOT NULL UNIQUE,
    service_type TEXT NOT NULL,
    access_mode  TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL
);

CREATE TABLE service_entry_methods (
    entry_id   BIGINT NOT NULL REFERENCES service_entries (id) ON DELETE CASCADE,
    nsid       TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (entry_id, nsid)
);
-- The entries of a method, read for every proxied XRPC call.
CREATE INDEX service_entry_methods_nsid ON service_entry_methods (nsid);

CREATE TABLE service_entry_allowlist (
    entry_id   BIGINT NOT NULL REFERENCES service_entries (id) ON DELETE CASCADE,
    did        TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (entry_id, did)
);
