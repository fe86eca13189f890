-- A delete remembers the repository revision it happened at, so that an
-- older write replayed later (a rewound stream, a backfill racing live
-- events) cannot bring the record back.
CREATE TABLE record_tombstones (
    uri        TEXT PRIMARY KEY,
    rev        TEXT NOT NULL,
    deleted_at INTEGER NOT NULL
);
CREATE INDEX record_tombstones_deleted ON record_tombstones (deleted_at);
