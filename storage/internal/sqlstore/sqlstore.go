// Package sqlstore holds the storage code shared by the SQLite and PostgreSQL
// backends. Queries are written once with "?" placeholders; a Dialect
// rewrites them and supplies the few operations whose SQL differs.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/lexview/lexview/storage"
)

// Dialect is what differs between the SQL backends.
type Dialect interface {
	// Name is "sqlite" or "postgres".
	Name() string
	// Placeholder returns the n-th (1-based) bind placeholder.
	Placeholder(n int) string
	// TypedParams reports whether "?::type" casts are kept by Bind.
	TypedParams() bool
	// IsUniqueViolation reports whether err is a unique-constraint failure.
	IsUniqueViolation(err error) bool
	// IsDeadlock reports whether err is the database breaking a deadlock
	// (the transaction was rolled back and may be tried again).
	IsDeadlock(err error) bool
	// DBInfo describes the database.
	DBInfo(ctx context.Context, db *DB) (storage.DBInfo, error)
	// Time converts a time into the value stored in time columns.
	Time(t time.Time) any
	// LockMigrations serialises migrators; it runs first in each
	// migration transaction.
	LockMigrations(ctx context.Context, tx *sql.Tx) error
	// UpsertRecords writes records (at most one per URI) inside tx. Rows
	// with a newer non-empty rev than the incoming one are kept, and so are
	// tombstones newer than it: the write is skipped. A row at the same
	// rev and CID is left as it is (a replayed event), and a row with the
	// same CID keeps its indexed_at and created_at: a record's sort key
	// moves only when the record changes. created_at is the record's
	// CreatedAt, which the caller has computed.
	// It returns the records written (not skipped), with the created_at
	// each row holds after the write, for the link index.
	UpsertRecords(ctx context.Context, tx *sql.Tx, recs []storage.Record) ([]Stored, error)
	// InsertLinks stores link rows inside tx; rows already stored are
	// left as they are.
	InsertLinks(ctx context.Context, tx *sql.Tx, links []LinkRow) error
	// DeleteRecords removes records (at most one per URI) inside tx. A
	// delete carrying a rev removes only rows at that rev or older, and
	// leaves a tombstone at that rev.
	DeleteRecords(ctx context.Context, tx *sql.Tx, recs []storage.Record, now time.Time) error

	// LockShared ends a SELECT inside a write transaction so that the
	// rows read stay as read until it commits (" FOR SHARE"), or is ""
	// where a writer excludes every other anyway (SQLite).
	LockShared() string

	// JSONDialect renders access to record fields for QueryRecords.
	JSONDialect
	// RawSyntax selects the lexical rules the raw-statement guard applies.
	RawSyntax() Syntax
	// RunRaw runs fn, which prepares and runs a script's raw statement, in
	// a transaction on pool, under the database's own enforcement of the
	// raw-SQL allow-list (see rawpolicy.go): only the relations and
	// functions it allows, no writes in a read, no write but to the
	// records table. It commits a write once fn succeeds, and returns the
	// connection to the pool without the restrictions whatever happens (an
	// error, a panic, a cancelled context). A statement the database
	// refuses under the allow-list fails with a RawRefused error; one that
	// makes a string or blob longer than storage.MaxRawValue, where the
	// database can stop it (SQLite), with storage.ErrRawTooLarge.
	RunRaw(ctx context.Context, pool *sql.DB, write bool, fn func(tx *sql.Tx) error) error
}

// DB implements storage.Store on top of database/sql.
type DB struct {
	dialect    Dialect
	writer     *sql.DB
	reader     *sql.DB
	migrations fs.FS
	q          queries
	// reads keeps the reader pool's statements prepared; writes the
	// writer pool's few hot ones (label ingestion).
	reads, writes *stmtCache
	// links counts what the link index skipped.
	links linkCounters
	// fieldIndexes caches the ready value indexes (plan.go).
	fieldIndexes fieldIndexCache
}

// Open wraps a writer and a reader pool (they may be the same *sql.DB).
// migrations holds the dialect's numbered *.sql files.
func Open(d Dialect, writer, reader *sql.DB, migrations fs.FS) *DB {
	return &DB{dialect: d, writer: writer, reader: reader, migrations: migrations, q: newQueries(d),
		reads: &stmtCache{pool: reader}, writes: &stmtCache{pool: writer}}
}

// Dialect reports the backend name.
func (db *DB) Dialect() string { return db.dialect.Name() }

// Writer is the connection pool that writes.
func (db *DB) Writer() *sql.DB { return db.writer }

// Reader is the connection pool that reads.
func (db *DB) Reader() *sql.DB { return db.reader }

// Close closes both pools.
func (db *DB) Close() error {
	err := errors.Join(db.reads.close(), db.writes.close(), db.writer.Close())
	if db.reader != db.writer {
		err = errors.Join(err, db.reader.Close())
	}
	return err
}

// Bind rewrites "?" placeholders into the dialect's form. A placeholder may
// carry a type cast ("?::jsonb"), kept by dialects with typed parameters and
// dropped by the others. Question marks inside single-quoted literals are
// left alone.
func Bind(d Dialect, q string) string {
	return substitute(d, q, d.Placeholder)
}

// substitute replaces the n-th (1-based) "?" placeholder of q, outside
// single-quoted literals, with sub(n); a "::type" cast after one is kept
// by dialects with typed parameters and dropped by the others.
func substitute(d Dialect, q string, sub func(n int) string) string {
	var b strings.Builder
	n, quoted := 0, false
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'':
			quoted = !quoted
			b.WriteByte(c)
		case c == '?' && !quoted:
			n++
			b.WriteString(sub(n))
			if strings.HasPrefix(q[i+1:], "::") {
				j := i + 3
				for j < len(q) && (q[j] == '_' || q[j] >= 'a' && q[j] <= 'z' || q[j] >= 'A' && q[j] <= 'Z' || q[j] >= '0' && q[j] <= '9') {
					j++
				}
				if d.TypedParams() {
					b.WriteString(q[i+1 : j])
				}
				i = j - 1
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// QuestionPlaceholder is the Placeholder of dialects that use "?".
func QuestionPlaceholder(int) string { return "?" }

// DollarPlaceholder is the Placeholder of dialects that use "$n".
func DollarPlaceholder(n int) string { return "$" + strconv.Itoa(n) }

// inTx runs fn in a write transaction.
func (db *DB) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := db.writer.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// Time is a scan target for time columns stored either natively or as
// integer microseconds since the Unix epoch.
type Time struct{ T time.Time }

// Scan implements sql.Scanner.
func (t *Time) Scan(v any) error {
	switch x := v.(type) {
	case time.Time:
		t.T = x.UTC()
	case int64:
		t.T = time.UnixMicro(x).UTC()
	case nil:
		t.T = time.Time{}
	default:
		return fmt.Errorf("sqlstore: cannot scan %T into a time", v)
	}
	return nil
}

// MicrosTime stores t as integer microseconds since the Unix epoch.
func MicrosTime(t time.Time) any { return t.UnixMicro() }

// NativeTime stores t as a UTC time truncated to microseconds.
func NativeTime(t time.Time) any { return t.UTC().Truncate(time.Microsecond) }
