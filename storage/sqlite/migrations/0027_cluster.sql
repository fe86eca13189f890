-- Coordination of instances sharing the database (the leader's lease,
-- the instances' heartbeats). Times are milliseconds since the Unix epoch
-- by the database's clock. A SQLite instance is always its own leader;
-- the tables exist so that both backends have one schema.
CREATE TABLE leases (
    name        TEXT PRIMARY KEY,
    holder      TEXT NOT NULL,
    token       INTEGER NOT NULL,
    expires_ms  INTEGER NOT NULL,
    acquired_ms INTEGER NOT NULL
);

CREATE TABLE instances (
    id         TEXT PRIMARY KEY,
    started_ms INTEGER NOT NULL,
    seen_ms    INTEGER NOT NULL,
    info       TEXT NOT NULL
);
