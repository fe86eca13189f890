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

// StepMarker starts a line of a migration file that runs a Go step at that
// point: "-- lexview:step NAME". The SQL before the line runs first, then
// the step (see migrationStep), then the SQL after it, all in the
// migration's transaction. Steps do what SQL cannot do the same way on
// both databases, such as computing a value with the Go code that
// computes it at write time.
const StepMarker = "-- lexview:step "

// migrationStep returns the Go step of a migration named name, or nil.
func migrationStep(name string) func(ctx context.Context, db *DB, tx *sql.Tx) error {
	switch name {
	case "fill-created-at":
		return fillCreatedAt
	}
	return nil
}

// migrationPart is a stretch of a migration's SQL and the step after it
// ("" for none).
type migrationPart struct {
	sql, step string
}

// parts splits m at its step markers.
func (m Migration) parts() ([]migrationPart, error) {
	var out []migrationPart
	var b strings.Builder
	for line := range strings.Lines(m.SQL) {
		name, ok := strings.CutPrefix(line, StepMarker)
		if !ok {
			b.WriteString(line)
			continue
		}
		name = strings.TrimSpace(name)
		if migrationStep(name) == nil {
			return nil, fmt.Errorf("migration %q: unknown step %q", m.Name, name)
		}
		out = append(out, migrationPart{sql: b.String(), step: name})
		b.Reset()
	}
	return append(out, migrationPart{sql: b.String()}), nil
}

// LoadMigrations reads files named NNNN_name.sql from fsys, in version
// order. Versions must be unique and positive, and the steps they name
// must exist.
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
		m := Migration{Version: v, Name: name, SQL: string(body)}
		if _, err := m.parts(); err != nil {
			return nil, err
		}
		out = append(out, m)
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
		parts, err := m.parts()
		if err != nil {
			return err
		}
		for _, p := range parts {
			if strings.TrimSpace(p.sql) != "" {
				if _, err := tx.ExecContext(ctx, p.sql); err != nil {
					return fmt.Errorf("apply migration %s: %w", m.Name, err)
				}
			}
			if p.step != "" {
				if err := migrationStep(p.step)(ctx, db, tx); err != nil {
					return fmt.Errorf("apply migration %s, step %s: %w", m.Name, p.step, err)
				}
			}
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
