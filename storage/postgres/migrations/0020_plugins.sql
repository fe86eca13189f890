-- Plugins: installed WASM plugins (manifest and module as fetched, with
-- the optional SHA-256 pin of the module) and their sealed secrets.
-- Secrets are keyed by plugin ID without a foreign key: deleting a plugin
-- keeps its secrets for a reinstall.
CREATE TABLE plugins (
    id           TEXT PRIMARY KEY,
    url          TEXT NOT NULL,
    sha256       TEXT,
    manifest     BYTEA NOT NULL,
    wasm         BYTEA NOT NULL,
    enabled      BOOLEAN NOT NULL,
    installed_at TIMESTAMPTZ NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL
);

CREATE TABLE plugin_secrets (
    plugin_id  TEXT NOT NULL,
    key        TEXT NOT NULL,
    sealed     TEXT NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (plugin_id, key)
);
