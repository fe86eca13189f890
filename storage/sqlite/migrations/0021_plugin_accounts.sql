-- External-account connections made through plugins (auth_type oauth2):
-- one per plugin and user, with the plugin's tokens sealed by the
-- instance (bound to the plugin and the user's DID) and its sync cursor.
CREATE TABLE plugin_accounts (
    plugin_id     TEXT NOT NULL,
    did           TEXT NOT NULL,
    session_id    TEXT NOT NULL,
    external_id   TEXT NOT NULL,
    external_name TEXT NOT NULL,
    sealed_tokens TEXT NOT NULL,
    sync_cursor   TEXT NOT NULL,
    connected_at  INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    last_sync_at  INTEGER,
    PRIMARY KEY (plugin_id, did)
);
