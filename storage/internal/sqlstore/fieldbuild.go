package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/lexview/lexview/storage"
)

// DefaultBuildChunk is the number of records a BuildFieldIndexes step
// processes when asked for none.
const DefaultBuildChunk = 1000

// buildingIndex is a field index with the work it has left: a build to
// advance from its position, or, once dropped, entries to delete.
type buildingIndex struct {
	storage.FieldIndex
	dropping bool
	valueSQL string
	// after is the position reached: the build walks the collection
	// newest first (created_at DESC, uri DESC); nil before the first
	// chunk.
	after *storage.Position
}

// fieldIndexKind is how the store builds and removes the indexes of one
// kind. Each kind keeps its own entries (the triggers on records keep
// them current); build fills them for the records stored before the
// declaration, chunk by chunk, and purge deletes those of a dropped index.
type fieldIndexKind struct {
	// build processes up to n records after idx.after, in tx, and
	// returns how many it processed and the position reached (nil when
	// the collection is exhausted: the index is then complete).
	build func(ctx context.Context, db *DB, tx *sql.Tx, idx buildingIndex, n int) (processed int, next *storage.Position, err error)
	// purge deletes up to n entries of a dropped index and returns how
	// many it deleted (fewer than n when none are left).
	purge func(ctx context.Context, db *DB, tx *sql.Tx, id int64, n int) (int, error)
	// declare, when set, runs in the transaction that declares an index
	// of the kind, once its row is inserted; an error refuses the
	// declaration (full-text search gives a text index its slot here).
	declare func(ctx context.Context, db *DB, tx *sql.Tx, idx storage.FieldIndex) error
}

// fieldIndexKinds returns the kinds the store builds. A kind missing here
// may be declared; its indexes stay building.
func fieldIndexKinds() map[storage.FieldIndexKind]fieldIndexKind {
	return map[storage.FieldIndexKind]fieldIndexKind{
		storage.FieldIndexValue: {build: buildValueChunk, purge: purgeValues},
		storage.FieldIndexText:  textIndexKind, // searchindex.go
	}
}

// BuildFieldIndexes implements storage.FieldIndexStore: it advances the
// oldest index with work left (a build, or the removal of a dropped
// index's entries) by up to n records, in one transaction. On PostgreSQL
// that index's registry row is locked with SKIP LOCKED, so instances
// building at once take different indexes.
func (db *DB) BuildFieldIndexes(ctx context.Context, n int) (storage.FieldIndexProgress, error) {
	if n <= 0 {
		n = DefaultBuildChunk
	}
	kinds := fieldIndexKinds()
	var progress storage.FieldIndexProgress
	var work *buildingIndex
	var stepErr error
	err := db.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		if work, err = db.nextBuild(ctx, tx, kinds); err != nil || work == nil {
			return err
		}
		k := kinds[work.Kind]
		if work.dropping {
			return db.purgeStep(ctx, tx, k, work, n, &progress)
		}
		processed, next, err := k.build(ctx, db, tx, *work, n)
		if err != nil {
			stepErr = err
			return err
		}
		progress.Processed = processed
		f, err := db.advanceBuild(ctx, tx, work, processed, next)
		if err != nil {
			return err
		}
		if f.State == storage.FieldIndexReady {
			progress.Finished = append(progress.Finished, f)
		}
		return nil
	})
	if err != nil && stepErr != nil && ctx.Err() == nil && !db.dialect.IsDeadlock(err) {
		// The build itself failed (on SQLite, for example, a record that
		// a script stored as malformed JSON): it would fail again.
		f, ferr := db.failBuild(ctx, work.ID, stepErr)
		if ferr != nil {
			return progress, errors.Join(err, ferr)
		}
		progress.Finished = append(progress.Finished, f)
		err = nil
	}
	if err != nil {
		return storage.FieldIndexProgress{}, fmt.Errorf("build field indexes: %w", err)
	}
	if len(progress.Finished) > 0 {
		db.fieldIndexes.forget()
	}
	if work == nil {
		return progress, nil
	}
	pending, err := db.buildPending(ctx, kinds)
	if err != nil {
		return progress, err
	}
	progress.Pending = pending
	return progress, nil
}

// workKinds lists the kinds with a builder, as SQL literals.
func workKinds(kinds map[storage.FieldIndexKind]fieldIndexKind) string {
	s := ""
	for k := range kinds {
		if s != "" {
			s += ", "
		}
		s += sqlString(string(k))
	}
	return s
}

// nextBuild returns the oldest index with work left, or nil.
func (db *DB) nextBuild(ctx context.Context, tx *sql.Tx, kinds map[storage.FieldIndexKind]fieldIndexKind) (*buildingIndex, error) {
	q := `SELECT ` + fieldIndexColumns + `, value_sql, pos_created, pos_uri FROM field_indexes
		WHERE state = 'dropping' OR state = 'building' AND kind IN (` + workKinds(kinds) + `) ORDER BY id LIMIT 1`
	if db.dialect.Name() == "postgres" {
		q += ` FOR UPDATE SKIP LOCKED`
	}
	var w buildingIndex
	var kind, state string
	var created, updated, pos Time
	var posURI string
	var posSet any // pos_created: NULL before the first chunk
	err := tx.QueryRowContext(ctx, q).Scan(&w.ID, &w.Collection, &w.Path, &kind, &state, &w.Done, &w.Total, &w.Error,
		&created, &updated, &w.valueSQL, &posSet, &posURI)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("next field index to build: %w", err)
	}
	w.Kind, w.State, w.dropping = storage.FieldIndexKind(kind), storage.FieldIndexState(state), state == stateDropping
	w.CreatedAt, w.UpdatedAt = created.T, updated.T
	if posSet != nil {
		if err := pos.Scan(posSet); err != nil {
			return nil, err
		}
		w.after = &storage.Position{Time: pos.T, URI: posURI}
	}
	return &w, nil
}

// advanceBuild stores the position a build reached, or marks the index
// ready when it reached the end, and returns the index.
func (db *DB) advanceBuild(ctx context.Context, tx *sql.Tx, w *buildingIndex, processed int, next *storage.Position) (storage.FieldIndex, error) {
	now := db.dialect.Time(time.Now())
	var row *sql.Row
	if next == nil {
		row = tx.QueryRowContext(ctx, Bind(db.dialect, `UPDATE field_indexes
			SET state = 'ready', done = done + ?, pos_created = NULL, pos_uri = '', updated_at = ?
			WHERE id = ? RETURNING `+fieldIndexColumns), processed, now, w.ID)
	} else {
		row = tx.QueryRowContext(ctx, Bind(db.dialect, `UPDATE field_indexes
			SET done = done + ?, pos_created = ?, pos_uri = ?, updated_at = ?
			WHERE id = ? RETURNING `+fieldIndexColumns), processed, db.dialect.Time(next.Time), next.URI, now, w.ID)
	}
	f, err := scanFieldIndex(row)
	if err != nil {
		return f, fmt.Errorf("store field index progress: %w", err)
	}
	return f, nil
}

// purgeStep deletes a chunk of a dropped index's entries, and its row
// once none are left.
func (db *DB) purgeStep(ctx context.Context, tx *sql.Tx, k fieldIndexKind, w *buildingIndex, n int, progress *storage.FieldIndexProgress) error {
	deleted := 0
	if k.purge != nil {
		var err error
		if deleted, err = k.purge(ctx, db, tx, w.ID, n); err != nil {
			return fmt.Errorf("purge field index %d: %w", w.ID, err)
		}
	}
	progress.Processed = deleted
	if deleted < n {
		if _, err := tx.ExecContext(ctx, Bind(db.dialect, `DELETE FROM field_indexes WHERE id = ?`), w.ID); err != nil {
			return fmt.Errorf("remove field index %d: %w", w.ID, err)
		}
	}
	return nil
}

// failBuild marks a building index failed with err.
func (db *DB) failBuild(ctx context.Context, id int64, cause error) (storage.FieldIndex, error) {
	msg := truncate(cause.Error(), 1000)
	f, err := scanFieldIndex(db.writer.QueryRowContext(ctx, Bind(db.dialect, `UPDATE field_indexes
		SET state = 'failed', error = ?, updated_at = ? WHERE id = ? AND state = 'building' RETURNING `+fieldIndexColumns),
		msg, db.dialect.Time(time.Now()), id))
	if err != nil {
		return f, fmt.Errorf("mark field index %d failed: %w", id, err)
	}
	return f, nil
}

// buildPending reports whether any index has work left.
func (db *DB) buildPending(ctx context.Context, kinds map[storage.FieldIndexKind]fieldIndexKind) (bool, error) {
	var n int
	err := db.writer.QueryRowContext(ctx, `SELECT COUNT(*) FROM field_indexes
		WHERE state = 'dropping' OR state = 'building' AND kind IN (`+workKinds(kinds)+`)`).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("build field indexes: %w", err)
	}
	return n > 0, nil
}

// buildValueChunk fills a value index's entries for the next n records of
// its collection, newest first, with the index's value_sql: the entries
// the triggers would have written. It reads the chunk's keys first
// (records_collection_created serves them), then inserts the chunk's
// entries, keeping any that exist.
//
// Why the result is right while records are written:
//   - Every write committed after the declaration maintained its entries
//     itself (triggers), and every write committed before it is visible to
//     the build (see awaitWriters). A record written since the build
//     passed its position is indexed by its own write.
//   - An entry the build inserts never overwrites one (ON CONFLICT DO
//     NOTHING): where both exist, the trigger's is the newer.
//   - SQLite: the build's transaction and the writers' are serialised (one
//     writer); the build reads the records as they are when it runs.
//   - PostgreSQL (READ COMMITTED): the chunk's records are read FOR KEY
//     SHARE. A record updated after the build's snapshot is re-read at its
//     latest version (its entry is the trigger's anyway); one deleted
//     before the build locks it is skipped; a delete waiting on the lock
//     runs after the build commits, and its trigger then removes the
//     build's entry. So the build never leaves an entry for a record that
//     is gone. A writer inserting a record concurrently owns its entry:
//     the build either waits on it (the conflict of ON CONFLICT) and keeps
//     it, or inserts first, and the writer's upsert then overwrites.
//   - Positions only move forward; a record whose created_at changes is
//     rewritten, hence re-indexed by its write.
func buildValueChunk(ctx context.Context, db *DB, tx *sql.Tx, idx buildingIndex, n int) (int, *storage.Position, error) {
	after, args := "", []any{idx.Collection}
	if idx.after != nil {
		t := db.dialect.Time(idx.after.Time)
		after, args = afterPosition, append(args, t, t, idx.after.URI)
	}
	count, last, err := chunkEnd(ctx, tx, Bind(db.dialect, `SELECT created_at, uri FROM records WHERE collection = ?`+after+
		` ORDER BY `+newestFirst+` LIMIT ?`), append(args, n)...)
	if err != nil {
		return 0, nil, err
	}
	if count == 0 {
		return 0, nil, nil
	}
	lock := ""
	if db.dialect.Name() == "postgres" {
		lock = ` FOR KEY SHARE OF records`
	}
	t := db.dialect.Time(last.Time)
	_, err = tx.ExecContext(ctx, Bind(db.dialect, `INSERT INTO field_index_values (index_id, rec_uri, grp, num, str, rec_created)
		SELECT ?, uri, `+idx.valueSQL+`, created_at FROM records
		WHERE collection = ?`+after+` AND created_at >= ? AND (created_at > ? OR uri >= ?)`+lock+`
		ON CONFLICT (index_id, rec_uri) DO NOTHING`), append(append([]any{idx.ID}, args...), t, t, last.URI)...)
	if err != nil {
		return 0, nil, err
	}
	if count < n {
		return count, nil, nil
	}
	return count, &last, nil
}

// purgeValues deletes up to n entries of a dropped value index.
func purgeValues(ctx context.Context, db *DB, tx *sql.Tx, id int64, n int) (int, error) {
	res, err := tx.ExecContext(ctx, Bind(db.dialect, `DELETE FROM field_index_values WHERE index_id = ? AND rec_uri IN
		(SELECT rec_uri FROM field_index_values WHERE index_id = ? ORDER BY rec_uri LIMIT ?)`), id, id, n)
	if err != nil {
		return 0, err
	}
	deleted, err := res.RowsAffected()
	return int(deleted), err
}

// chunkEnd runs a build step's query for the (created_at, uri) of the
// records of its chunk, newest first, and returns how many there are and
// the position of the last, where the next step starts.
func chunkEnd(ctx context.Context, tx *sql.Tx, query string, args ...any) (int, storage.Position, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return 0, storage.Position{}, err
	}
	defer rows.Close()
	count := 0
	var last storage.Position
	for rows.Next() {
		var t Time
		if err := rows.Scan(&t, &last.URI); err != nil {
			return 0, storage.Position{}, err
		}
		last.Time = t.T
		count++
	}
	return count, last, rows.Err()
}
