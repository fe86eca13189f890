package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lexview/lexview/storage"
)

const serviceEntryColumns = `id, fragment, service_type, access_mode, created_at, updated_at`

func scanServiceEntry(row rowScanner) (storage.ServiceEntry, error) {
	var e storage.ServiceEntry
	var created, updated Time
	err := row.Scan(&e.ID, &e.Fragment, &e.ServiceType, &e.AccessMode, &created, &updated)
	e.CreatedAt, e.UpdatedAt = created.T, updated.T
	return e, err
}

// ListServiceEntries implements storage.ServiceEntryStore.
func (db *DB) ListServiceEntries(ctx context.Context) ([]storage.ServiceEntry, error) {
	out, err := queryAll(ctx, db.reader, `SELECT `+serviceEntryColumns+` FROM service_entries ORDER BY id`, scanServiceEntry)
	if err != nil {
		return nil, fmt.Errorf("list service entries: %w", err)
	}
	return out, nil
}

// GetServiceEntry implements storage.ServiceEntryStore.
func (db *DB) GetServiceEntry(ctx context.Context, id int64) (storage.ServiceEntry, error) {
	e, err := scanServiceEntry(db.reader.QueryRowContext(ctx,
		Bind(db.dialect, `SELECT `+serviceEntryColumns+` FROM service_entries WHERE id = ?`), id))
	return e, notFound(err)
}

// CreateServiceEntry implements storage.ServiceEntryStore.
func (db *DB) CreateServiceEntry(ctx context.Context, e storage.ServiceEntry) (storage.ServiceEntry, error) {
	stored, err := scanServiceEntry(db.writer.QueryRowContext(ctx, Bind(db.dialect,
		`INSERT INTO service_entries (fragment, service_type, access_mode, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?) RETURNING `+serviceEntryColumns),
		e.Fragment, e.ServiceType, e.AccessMode, db.dialect.Time(e.CreatedAt), db.dialect.Time(e.UpdatedAt)))
	return stored, db.conflict("create service entry", err)
}

// UpdateServiceEntry implements storage.ServiceEntryStore.
func (db *DB) UpdateServiceEntry(ctx context.Context, e storage.ServiceEntry) error {
	err := db.execOne(ctx, "update service entry",
		`UPDATE service_entries SET fragment = ?, service_type = ?, access_mode = ?, updated_at = ? WHERE id = ?`,
		e.Fragment, e.ServiceType, e.AccessMode, db.dialect.Time(e.UpdatedAt), e.ID)
	if err != nil && db.dialect.IsUniqueViolation(err) {
		return storage.ErrConflict
	}
	return err
}

// DeleteServiceEntry implements storage.ServiceEntryStore. The bindings
// and the allowlist go with it (ON DELETE CASCADE).
func (db *DB) DeleteServiceEntry(ctx context.Context, id int64) error {
	return db.execOne(ctx, "delete service entry", `DELETE FROM service_entries WHERE id = ?`, id)
}

// entryStrings lists one string column of an entry's child table, or
// ErrNotFound when the entry is absent.
func (db *DB) entryStrings(ctx context.Context, what, q string, id int64) ([]string, error) {
	out, err := queryAll(ctx, db.reader, Bind(db.dialect, q), func(row rowScanner) (string, error) {
		var s string
		return s, row.Scan(&s)
	}, id)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if len(out) == 0 {
		if _, err := db.GetServiceEntry(ctx, id); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// entryRows inserts (entry, value) rows into table, or deletes them when
// insert is false, in one transaction that first checks the entry exists.
func (db *DB) entryRows(ctx context.Context, what, table, column string, id int64, values []string, insert bool, at time.Time) error {
	err := db.inTx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, Bind(db.dialect, `SELECT COUNT(*) FROM service_entries WHERE id = ?`), id).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return storage.ErrNotFound
		}
		q := `DELETE FROM ` + table + ` WHERE entry_id = ? AND ` + column + ` = ?`
		if insert {
			q = `INSERT INTO ` + table + ` (entry_id, ` + column + `, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`
		}
		stmt, err := tx.PrepareContext(ctx, Bind(db.dialect, q))
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, v := range values {
			args := []any{id, v}
			if insert {
				args = append(args, db.dialect.Time(at))
			}
			if _, err := stmt.ExecContext(ctx, args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return fmt.Errorf("%s: %w", what, err)
	}
	return err
}

// ServiceEntryMethods implements storage.ServiceEntryStore.
func (db *DB) ServiceEntryMethods(ctx context.Context, id int64) ([]string, error) {
	return db.entryStrings(ctx, "service entry methods", `SELECT nsid FROM service_entry_methods WHERE entry_id = ? ORDER BY nsid`, id)
}

// BindServiceEntryMethods implements storage.ServiceEntryStore.
func (db *DB) BindServiceEntryMethods(ctx context.Context, id int64, nsids []string, at time.Time) error {
	return db.entryRows(ctx, "bind service entry methods", "service_entry_methods", "nsid", id, nsids, true, at)
}

// UnbindServiceEntryMethods implements storage.ServiceEntryStore.
func (db *DB) UnbindServiceEntryMethods(ctx context.Context, id int64, nsids []string) error {
	return db.entryRows(ctx, "unbind service entry methods", "service_entry_methods", "nsid", id, nsids, false, time.Time{})
}

// ServiceEntriesForMethod implements storage.ServiceEntryStore.
func (db *DB) ServiceEntriesForMethod(ctx context.Context, nsid string) ([]storage.ServiceEntry, error) {
	out, err := queryAll(ctx, db.reader, Bind(db.dialect, `SELECT e.id, e.fragment, e.service_type, e.access_mode, e.created_at, e.updated_at
		FROM service_entries e JOIN service_entry_methods m ON m.entry_id = e.id WHERE m.nsid = ? ORDER BY e.id`), scanServiceEntry, nsid)
	if err != nil {
		return nil, fmt.Errorf("service entries for method: %w", err)
	}
	return out, nil
}

// ListServiceEntryBindings implements storage.ServiceEntryStore.
func (db *DB) ListServiceEntryBindings(ctx context.Context) ([]storage.ServiceEntryBinding, error) {
	out, err := queryAll(ctx, db.reader, `SELECT entry_id, nsid FROM service_entry_methods ORDER BY entry_id, nsid`,
		func(row rowScanner) (storage.ServiceEntryBinding, error) {
			var b storage.ServiceEntryBinding
			return b, row.Scan(&b.EntryID, &b.NSID)
		})
	if err != nil {
		return nil, fmt.Errorf("list service entry bindings: %w", err)
	}
	return out, nil
}

// ServiceEntryAllowlist implements storage.ServiceEntryStore.
func (db *DB) ServiceEntryAllowlist(ctx context.Context, id int64) ([]string, error) {
	return db.entryStrings(ctx, "service entry allowlist", `SELECT did FROM service_entry_allowlist WHERE entry_id = ? ORDER BY did`, id)
}

// AllowServiceEntryCallers implements storage.ServiceEntryStore.
func (db *DB) AllowServiceEntryCallers(ctx context.Context, id int64, dids []string, at time.Time) error {
	return db.entryRows(ctx, "allow service entry callers", "service_entry_allowlist", "did", id, dids, true, at)
}

// DisallowServiceEntryCallers implements storage.ServiceEntryStore.
func (db *DB) DisallowServiceEntryCallers(ctx context.Context, id int64, dids []string) error {
	return db.entryRows(ctx, "disallow service entry callers", "service_entry_allowlist", "did", id, dids, false, time.Time{})
}

// ServiceEntryAllows implements storage.ServiceEntryStore.
func (db *DB) ServiceEntryAllows(ctx context.Context, ids []int64, did string) (bool, error) {
	if len(ids) == 0 {
		return false, nil
	}
	args := make([]any, 0, len(ids)+1)
	args = append(args, did)
	for _, id := range ids {
		args = append(args, id)
	}
	q := `SELECT COUNT(*) FROM service_entry_allowlist WHERE did = ? AND entry_id IN (` + strings.Repeat("?, ", len(ids)-1) + `?)`
	var n int
	if err := db.reader.QueryRowContext(ctx, Bind(db.dialect, q), args...).Scan(&n); err != nil {
		return false, fmt.Errorf("service entry allowlist: %w", err)
	}
	return n > 0, nil
}
