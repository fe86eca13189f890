// Package sqlite is the embedded storage backend of Lexview, built on
// mattn/go-sqlite3. It runs in WAL mode with one writer connection and a
// pool of read-only connections, so reads never wait for the writer.
package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-sqlite3" // registers the "sqlite3" driver

	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/internal/sqlstore"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Store is the SQLite implementation of storage.Store.
type Store struct {
	*sqlstore.DB
	path string
}

var _ storage.Store = (*Store)(nil)

// Options tunes Open. The zero value is a good default.
type Options struct {
	// Readers is the size of the read pool; 0 means 2×GOMAXPROCS, at least 4.
	Readers int
	// BusyTimeout is how long a connection waits for a lock; 0 means 10s.
	BusyTimeout time.Duration
	// MmapSize is how much of the database file each read connection
	// maps into memory; 0 means DefaultMmapSize, negative turns mapping
	// off.
	MmapSize int64
}

// DefaultMmapSize is the default Options.MmapSize: 1 GiB of address
// space per read connection (the pages themselves are the operating
// system's file cache, shared by every connection).
const DefaultMmapSize = 1 << 30

// Open opens (creating if needed) the database file at path. It does not
// migrate; call Migrate. A new database is private to the service's user:
// its directory is created 0700 and the file 0600 (SQLite gives its -wal
// and -shm files the database file's mode); existing ones keep theirs.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if path == "" || strings.HasPrefix(path, ":memory:") || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("sqlite: a file path is required, got %q", path)
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("sqlite: create directory: %w", err)
		}
	}
	if f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		f.Close()
	} else if !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("sqlite: create %s: %w", path, err)
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = 10 * time.Second
	}
	switch {
	case opts.MmapSize == 0:
		opts.MmapSize = DefaultMmapSize
	case opts.MmapSize < 0:
		opts.MmapSize = 0
	}
	if opts.Readers <= 0 {
		opts.Readers = max(4, 2*runtime.GOMAXPROCS(0))
	}
	base := "file:" + (&url.URL{Path: path}).EscapedPath()
	// No _stmt_cache_size: scripts' raw statements must be compiled under
	// their authorizer, never taken from a cache (see RunRaw).
	common := fmt.Sprintf("_busy_timeout=%d&_foreign_keys=on&_journal_mode=WAL&_synchronous=NORMAL",
		opts.BusyTimeout.Milliseconds())

	// The one writer gets a large page cache: index pages of the records
	// table stay hot under sustained ingestion.
	writer, err := sql.Open("sqlite3", base+"?"+common+"&_cache_size=-131072&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("sqlite: open writer: %w", err)
	}
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0)
	writer.SetConnMaxIdleTime(0)
	if err := writer.PingContext(ctx); err != nil {
		writer.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	// Checkpoint the WAL less often (every ~40 MB instead of ~4 MB): fewer
	// rewrites of hot pages into the database file under ingestion. The
	// writer pool keeps its single connection forever, so this sticks.
	if _, err := writer.ExecContext(ctx, "PRAGMA wal_autocheckpoint=10000"); err != nil {
		writer.Close()
		return nil, fmt.Errorf("sqlite: configure %s: %w", path, err)
	}

	// Readers map the database file into memory (up to MmapSize): pages
	// are read without a system call and a copy each.
	reader := sql.OpenDB(connector{
		dsn:    base + "?" + common + "&_cache_size=-16000&_query_only=true",
		driver: &sqlite3.SQLiteDriver{ConnectHook: readerHook(opts.MmapSize)},
	})
	reader.SetMaxOpenConns(opts.Readers)
	reader.SetMaxIdleConns(opts.Readers)
	reader.SetConnMaxIdleTime(0)

	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	return &Store{DB: sqlstore.Open(dialect{path: path}, writer, reader, sub), path: path}, nil
}

// connector opens connections of one DSN with its own driver value (and
// so its own connect hook) without registering a driver name.
type connector struct {
	dsn    string
	driver *sqlite3.SQLiteDriver
}

func (c connector) Connect(context.Context) (driver.Conn, error) { return c.driver.Open(c.dsn) }
func (c connector) Driver() driver.Driver                        { return c.driver }

// readerHook returns the connect hook of the read connections: it sets
// their memory map size and registers the functions searches call.
func readerHook(mmapSize int64) func(*sqlite3.SQLiteConn) error {
	return func(c *sqlite3.SQLiteConn) error {
		if _, err := c.Exec(fmt.Sprintf("PRAGMA mmap_size=%d", mmapSize), nil); err != nil {
			return err
		}
		return RegisterSearchFunctions(c)
	}
}

// RegisterSearchFunctions registers on c the SQL functions that the
// store's full-text searches call: lexview_search_rank, the BM25 ranking
// computed from FTS4's matchinfo (FTS4 has none of its own; see
// docs/queries.md, section Search). The store registers them on its own
// read connections; a program that reads a Lexview database through
// connections of its own and runs the same search statements (such as
// the bare handler of scripts/benchindexes) registers them with this, in
// its driver's ConnectHook. The functions' arguments are Lexview's
// statements' own and may change with them.
func RegisterSearchFunctions(c *sqlite3.SQLiteConn) error {
	return c.RegisterFunc(sqlstore.SearchRankFunction, sqlstore.SearchRank, true)
}

// OpenURL opens a sqlite://PATH database URL.
func OpenURL(ctx context.Context, rawURL string) (*Store, error) {
	path, ok := strings.CutPrefix(rawURL, "sqlite://")
	if !ok {
		return nil, fmt.Errorf("sqlite: URL must start with sqlite://, got %q", rawURL)
	}
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	return Open(ctx, path, Options{})
}

// Path is the database file's location.
func (s *Store) Path() string { return s.path }

// Vacuum rebuilds the database file on the writer connection, returning
// free pages to the file system, then truncates the write-ahead log. It
// blocks other writers while it runs.
func (s *Store) Vacuum(ctx context.Context) error {
	if _, err := s.Writer().ExecContext(ctx, "VACUUM"); err != nil {
		return fmt.Errorf("sqlite: vacuum: %w", err)
	}
	if _, err := s.Writer().ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return fmt.Errorf("sqlite: checkpoint after vacuum: %w", err)
	}
	return nil
}

// dialect is SQLite's variant of the shared SQL.
type dialect struct {
	sqlstore.SQLiteJSON
	path string
}

func (dialect) Name() string             { return "sqlite" }
func (dialect) Placeholder(n int) string { return sqlstore.QuestionPlaceholder(n) }
func (dialect) Time(t time.Time) any     { return sqlstore.MicrosTime(t) }
func (dialect) TypedParams() bool        { return false }

// IsDeadlock is false: SQLite has one writer at a time.
func (dialect) IsDeadlock(error) bool { return false }

func (dialect) IsUniqueViolation(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey)
}

func (d dialect) DBInfo(ctx context.Context, db *sqlstore.DB) (storage.DBInfo, error) {
	info := storage.DBInfo{Dialect: "sqlite", Location: d.path, FreeDiskBytes: -1}
	if err := db.Reader().QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&info.Version); err != nil {
		return info, fmt.Errorf("sqlite version: %w", err)
	}
	if st, err := os.Stat(d.path); err == nil {
		info.SizeBytes = st.Size()
	}
	if st, err := os.Stat(d.path + "-wal"); err == nil {
		info.WALSizeBytes = st.Size()
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(filepath.Dir(d.path), &fs); err == nil {
		info.FreeDiskBytes = int64(fs.Bavail) * int64(fs.Bsize)
	}
	return info, nil
}
func (dialect) LockMigrations(context.Context, *sql.Tx) error {
	return nil // the writer pool has one connection and takes immediate locks
}

// upsertChunk is the most records one upsert statement writes: 9
// parameters each, far below SQLite's limit of 32766.
const upsertChunk = 250

// upsertRecords is the upsert of n records in one statement. One
// statement per chunk, not one per record: a statement that reaches the
// full-text index (triggers on records, migration 0031) makes FTS4 write
// the words it holds in memory as a new segment before it runs (FTS4's
// savepoint), so a statement per record would write a segment per record.
func upsertRecords(n int) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO records (uri, did, collection, rkey, cid, rev, record, indexed_at, created_at, invalid)
	SELECT column1, column2, column3, column4, column5, column6, column7, column8, column9, column10 FROM (VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
	}
	b.WriteString(`) AS v
	WHERE v.column6 = '' OR NOT EXISTS (SELECT 1 FROM record_tombstones t WHERE t.uri = v.column1 AND t.rev >= v.column6)
	` + sqlstore.RecordUpsertConflict + `
	RETURNING uri, created_at`)
	return b.String()
}

func (dialect) UpsertRecords(ctx context.Context, tx *sql.Tx, recs []storage.Record) ([]sqlstore.Stored, error) {
	index := make(map[string]int, len(recs))
	for i, r := range recs {
		index[r.URI] = i
	}
	stored := make([]sqlstore.Stored, 0, len(recs))
	var full *sql.Stmt // the statement of a whole chunk, prepared once
	defer func() {
		if full != nil {
			full.Close()
		}
	}()
	args := make([]any, 0, 10*min(len(recs), upsertChunk))
	for start := 0; start < len(recs); start += upsertChunk {
		chunk := recs[start:min(start+upsertChunk, len(recs))]
		args = args[:0]
		for _, r := range chunk {
			var invalid any // NULL for a valid record
			if r.Invalid != "" {
				invalid = r.Invalid
			}
			args = append(args, r.URI, r.DID, r.Collection, r.RKey, r.CID, r.Rev, string(r.Value), r.IndexedAt.UnixMicro(), r.CreatedAt.UnixMicro(), invalid)
		}
		var rows *sql.Rows
		var err error
		if len(chunk) == upsertChunk {
			if full == nil {
				if full, err = tx.PrepareContext(ctx, upsertRecords(upsertChunk)); err != nil {
					return nil, err
				}
			}
			rows, err = full.QueryContext(ctx, args...)
		} else {
			rows, err = tx.QueryContext(ctx, upsertRecords(len(chunk)), args...)
		}
		if err != nil {
			return nil, upsertError(chunk, err)
		}
		for rows.Next() {
			var uri string
			var created int64
			if err := rows.Scan(&uri, &created); err != nil {
				rows.Close()
				return nil, err
			}
			stored = append(stored, sqlstore.Stored{Index: index[uri], CreatedAt: time.UnixMicro(created).UTC()})
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, upsertError(chunk, err)
		}
	}
	// In batch order, as the records were given (RETURNING's order is
	// SQLite's).
	slices.SortFunc(stored, func(a, b sqlstore.Stored) int { return a.Index - b.Index })
	return stored, nil
}

// upsertError names the record of a one-record chunk that failed.
func upsertError(chunk []storage.Record, err error) error {
	if len(chunk) == 1 {
		return fmt.Errorf("%s: %w", chunk[0].URI, err)
	}
	return err
}

// deleteChunk is the most records one delete statement removes (and one
// tombstone statement marks): 2 parameters each.
const deleteChunk = 500

// pairs returns n placeholder pairs for a VALUES list.
func pairs(n int) string {
	return strings.TrimSuffix(strings.Repeat("(?, ?), ", n), ", ")
}

// deleteRecords removes n records in one statement (a record carrying a
// rev only at that rev or older), and putTombstones marks n deletes (the
// rev-less ones are left out), for the reason upsertRecords gives.
func deleteRecords(n int) string {
	return `DELETE FROM records WHERE uri IN (
		SELECT v.column1 FROM (VALUES ` + pairs(n) + `) AS v JOIN records r ON r.uri = v.column1
		WHERE v.column2 = '' OR r.rev = '' OR r.rev <= v.column2)`
}

func putTombstones(n int) string {
	return `INSERT INTO record_tombstones (uri, rev, deleted_at)
		SELECT column1, column2, ? FROM (VALUES ` + pairs(n) + `) WHERE column2 <> ''
		` + sqlstore.TombstoneConflict
}

func (dialect) DeleteRecords(ctx context.Context, tx *sql.Tx, recs []storage.Record, now time.Time) error {
	args := make([]any, 0, 1+2*min(len(recs), deleteChunk))
	for start := 0; start < len(recs); start += deleteChunk {
		chunk := recs[start:min(start+deleteChunk, len(recs))]
		args = append(args[:0], now.UnixMicro())
		for _, r := range chunk {
			args = append(args, r.URI, r.Rev)
		}
		if _, err := tx.ExecContext(ctx, deleteRecords(len(chunk)), args[1:]...); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, putTombstones(len(chunk)), args...); err != nil {
			return fmt.Errorf("tombstones: %w", err)
		}
	}
	return nil
}

// LockShared implements sqlstore.Dialect: SQLite's one writer excludes
// every other.
func (dialect) LockShared() string { return "" }
