package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/storage"
)

// The registry of declared field indexes (field_indexes, migration 0030)
// and its build. Value indexes are kept by triggers on records and filled
// by buildValueChunk (fieldbuild.go); see fieldvalues.go for their
// entries.

const fieldIndexColumns = `id, collection, path, kind, state, done, total, error, created_at, updated_at`

// stateDropping marks a dropped index whose entries the build is still
// deleting: invisible to listings, lookups and the planner.
const stateDropping = "dropping"

func scanFieldIndex(row rowScanner) (storage.FieldIndex, error) {
	var f storage.FieldIndex
	var kind, state string
	var created, updated Time
	if err := row.Scan(&f.ID, &f.Collection, &f.Path, &kind, &state, &f.Done, &f.Total, &f.Error, &created, &updated); err != nil {
		return f, err
	}
	f.Kind, f.State = storage.FieldIndexKind(kind), storage.FieldIndexState(state)
	f.CreatedAt, f.UpdatedAt = created.T, updated.T
	return f, nil
}

func invalidIndex(format string, a ...any) error {
	return fmt.Errorf("%w: %s", storage.ErrInvalidFieldIndex, fmt.Sprintf(format, a...))
}

// checkFieldIndexSpec validates spec and returns its parsed path.
func checkFieldIndexSpec(spec storage.FieldIndexSpec) ([]PathStep, error) {
	if _, err := syntax.ParseNSID(spec.Collection); err != nil {
		return nil, invalidIndex("collection %q is not an NSID", truncate(spec.Collection, 64))
	}
	switch spec.Kind {
	case storage.FieldIndexValue, storage.FieldIndexText:
	default:
		return nil, invalidIndex("kind %q is neither %q nor %q", truncate(string(spec.Kind), 16), storage.FieldIndexValue, storage.FieldIndexText)
	}
	path, err := ParseFieldPath(spec.Path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", storage.ErrInvalidFieldIndex, err)
	}
	return path, nil
}

// DeclareFieldIndex implements storage.FieldIndexStore.
func (db *DB) DeclareFieldIndex(ctx context.Context, spec storage.FieldIndexSpec) (storage.FieldIndex, bool, error) {
	path, err := checkFieldIndexSpec(spec)
	if err != nil {
		return storage.FieldIndex{}, false, err
	}
	// The build's total, counted before the transaction: on SQLite it
	// holds the one writer, and a count of a large collection takes a
	// while. (Records written meanwhile are indexed by their writes.)
	total, err := db.CountRecords(ctx, spec.Collection)
	if err != nil {
		return storage.FieldIndex{}, false, err
	}
	var out storage.FieldIndex
	var created bool
	err = db.inTx(ctx, func(tx *sql.Tx) error {
		created = false
		f, err := scanFieldIndex(tx.QueryRowContext(ctx, Bind(db.dialect, `SELECT `+fieldIndexColumns+` FROM field_indexes
			WHERE collection = ? AND path = ? AND kind = ? AND state <> 'dropping'`), spec.Collection, spec.Path, string(spec.Kind)))
		switch {
		case err == nil && f.State == storage.FieldIndexFailed:
			out, err = db.restartFieldIndex(ctx, tx, f, total)
			return err
		case err == nil:
			out = f
			return nil
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("find field index: %w", err)
		}
		var n int
		if err := tx.QueryRowContext(ctx, Bind(db.dialect, `SELECT COUNT(*) FROM field_indexes WHERE collection = ? AND state <> 'dropping'`),
			spec.Collection).Scan(&n); err != nil {
			return fmt.Errorf("count field indexes: %w", err)
		}
		if n >= storage.MaxFieldIndexes {
			return invalidIndex("collection %s has %d field indexes already, the most it may have", spec.Collection, n)
		}
		valueSQL := ""
		if spec.Kind == storage.FieldIndexValue {
			valueSQL = fieldValueSQL(db.dialect, path)
		}
		now := db.dialect.Time(time.Now())
		out, err = scanFieldIndex(tx.QueryRowContext(ctx, Bind(db.dialect, `INSERT INTO field_indexes
			(collection, path, kind, json_path, value_sql, state, total, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, 'building', ?, ?, ?) RETURNING `+fieldIndexColumns),
			spec.Collection, spec.Path, string(spec.Kind), db.dialect.PathText(path), valueSQL, total, now, now))
		if err != nil {
			return fmt.Errorf("insert field index: %w", err)
		}
		if k := fieldIndexKinds()[spec.Kind]; k.declare != nil {
			if err := k.declare(ctx, db, tx, out); err != nil {
				return err
			}
		}
		created = true
		return db.awaitWriters(ctx, tx)
	})
	if err != nil && db.dialect.IsUniqueViolation(err) {
		// A concurrent declaration of the same index won.
		return db.findFieldIndex(ctx, spec)
	}
	if err != nil {
		return storage.FieldIndex{}, false, err
	}
	return out, created, nil
}

// awaitWriters makes a new index's declaration wait, on PostgreSQL, for
// the transactions writing records to end, and the next ones wait for it
// (a SHARE lock on records, held until the declaration commits: as long
// as the longest write transaction then running, milliseconds). A writer
// whose triggers ran before the index existed, but that commits after the
// build read past its records, would otherwise leave them unindexed: with
// the lock, every write either committed before the declaration (and the
// build, which starts after it, sees it) or runs its triggers after it
// (and indexes its records itself). SQLite needs nothing: its one writer
// runs the declaration between two write transactions.
func (db *DB) awaitWriters(ctx context.Context, tx *sql.Tx) error {
	if db.dialect.Name() != "postgres" {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `SET LOCAL lock_timeout = '10s'`); err != nil {
		return fmt.Errorf("set lock timeout: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `LOCK TABLE records IN SHARE MODE`); err != nil {
		return fmt.Errorf("wait for record writers: %w", err)
	}
	return nil
}

// restartFieldIndex starts a failed index's build again from the start.
// Its entries are current (the triggers kept them while it was failed);
// the build adds the missing ones.
func (db *DB) restartFieldIndex(ctx context.Context, tx *sql.Tx, f storage.FieldIndex, total int64) (storage.FieldIndex, error) {
	f, err := scanFieldIndex(tx.QueryRowContext(ctx, Bind(db.dialect, `UPDATE field_indexes
		SET state = 'building', error = '', done = 0, total = ?, pos_created = NULL, pos_uri = '', updated_at = ?
		WHERE id = ? RETURNING `+fieldIndexColumns), total, db.dialect.Time(time.Now()), f.ID))
	if err != nil {
		return f, fmt.Errorf("restart field index: %w", err)
	}
	return f, nil
}

func (db *DB) findFieldIndex(ctx context.Context, spec storage.FieldIndexSpec) (storage.FieldIndex, bool, error) {
	f, err := scanFieldIndex(db.writer.QueryRowContext(ctx, Bind(db.dialect, `SELECT `+fieldIndexColumns+` FROM field_indexes
		WHERE collection = ? AND path = ? AND kind = ? AND state <> 'dropping'`), spec.Collection, spec.Path, string(spec.Kind)))
	if err != nil {
		return storage.FieldIndex{}, false, fmt.Errorf("find field index: %w", err)
	}
	return f, false, nil
}

// ListFieldIndexes implements storage.FieldIndexStore.
func (db *DB) ListFieldIndexes(ctx context.Context, collection string) ([]storage.FieldIndex, error) {
	q := `SELECT ` + fieldIndexColumns + ` FROM field_indexes WHERE state <> 'dropping'`
	var args []any
	if collection != "" {
		q += ` AND collection = ?`
		args = append(args, collection)
	}
	rows, err := db.reader.QueryContext(ctx, Bind(db.dialect, q+` ORDER BY collection, path, kind`), args...)
	if err != nil {
		return nil, fmt.Errorf("list field indexes: %w", err)
	}
	defer rows.Close()
	var out []storage.FieldIndex
	for rows.Next() {
		f, err := scanFieldIndex(rows)
		if err != nil {
			return nil, fmt.Errorf("list field indexes: %w", err)
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// GetFieldIndex implements storage.FieldIndexStore.
func (db *DB) GetFieldIndex(ctx context.Context, id int64) (storage.FieldIndex, error) {
	f, err := scanFieldIndex(db.reader.QueryRowContext(ctx, Bind(db.dialect,
		`SELECT `+fieldIndexColumns+` FROM field_indexes WHERE id = ? AND state <> 'dropping'`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return storage.FieldIndex{}, storage.ErrNotFound
	}
	if err != nil {
		return storage.FieldIndex{}, fmt.Errorf("get field index: %w", err)
	}
	return f, nil
}

// DropFieldIndex implements storage.FieldIndexStore. The planner stops
// using the index when this commits; its entries are deleted by
// BuildFieldIndexes, a chunk at a time, rather than here in one long
// transaction.
func (db *DB) DropFieldIndex(ctx context.Context, id int64) error {
	defer db.fieldIndexes.forget()
	return db.execOne(ctx, "drop field index", `UPDATE field_indexes SET state = 'dropping', updated_at = ?
		WHERE id = ? AND state <> 'dropping'`, db.dialect.Time(time.Now()), id)
}
