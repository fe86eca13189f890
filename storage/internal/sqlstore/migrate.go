package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Migration is one numbered schema change.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// LoadMigrations reads files named NNNN_name.sql from fsys, in version
// order. Versions must be unique and positive.
func LoadMigrations(fsys fs.FS) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var out []Migration
	seen := map[int]string{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".sql") {
			continue
		}
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %q: name must start with a positive number and an underscore", name)
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %q and %q share version %d", prev, name, v)
		}
		seen[v] = name
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("read migration %q: %w", name, err)
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// Migrate implements storage.Store: it applies every pending migration,
// each in its own transaction. Migrations are forward-only.
func (db *DB) Migrate(ctx context.Context) error { return db.MigrateTo(ctx, math.MaxInt) }

// MigrateTo applies the pending migrations numbered up to and including
// version, each in its own transaction, and leaves later ones pending (a
// later Migrate applies them). Tests of a data migration use it to build
// the schema as it was before the migration.
func (db *DB) MigrateTo(ctx context.Context, version int) error {
	migrations, err := LoadMigrations(db.migrations)
	if err != nil {
		return err
	}
	err = db.inTx(ctx, func(tx *sql.Tx) error {
		if err := db.dialect.LockMigrations(ctx, tx); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version INTEGER PRIMARY KEY,
			name TEXT NOT NULL,
			applied_at BIGINT NOT NULL
		)`)
		return err
	})
	if err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	for _, m := range migrations {
		if m.Version > version {
			break
		}
		if err := db.applyMigration(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

func (db *DB) applyMigration(ctx context.Context, m Migration) error {
	return db.inTx(ctx, func(tx *sql.Tx) error {
		if err := db.dialect.LockMigrations(ctx, tx); err != nil {
			return fmt.Errorf("lock migrations: %w", err)
		}
		var n int
		err := tx.QueryRowContext(ctx, Bind(db.dialect, `SELECT COUNT(*) FROM schema_migrations WHERE version = ?`), m.Version).Scan(&n)
		if err != nil {
			return fmt.Errorf("check migration %s: %w", m.Name, err)
		}
		if n > 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return fmt.Errorf("apply migration %s: %w", m.Name, err)
		}
		_, err = tx.ExecContext(ctx, Bind(db.dialect, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`),
			m.Version, m.Name, time.Now().Unix())
		if err != nil {
			return fmt.Errorf("record migration %s: %w", m.Name, err)
		}
		return nil
	})
}

// AppliedVersions lists the applied migration versions in order.
func (db *DB) AppliedVersions(ctx context.Context) ([]int, error) {
	rows, err := db.reader.QueryContext(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		return nil, fmt.Errorf("applied migrations: %w", err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
