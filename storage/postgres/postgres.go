// Package postgres is the PostgreSQL (17 or newer) storage backend of
// Lexview, built on lib/pq. Records are stored as jsonb and times as
// timestamptz, so filters and indexes work natively.
package postgres

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"time"

	"github.com/lib/pq"

	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/internal/sqlstore"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLockID is the advisory lock key that serialises migrators.
const migrationLockID = 0x6c657876 // "lexv"

// Store is the PostgreSQL implementation of storage.Store.
type Store struct {
	*sqlstore.DB
	url string // for the change listener's own connection
}

var _ storage.Store = (*Store)(nil)

// Options tunes Open. The zero value is a good default.
type Options struct {
	// MaxConns caps the pool that writes (and runs migrations and the
	// rest of the storage API's transactions); 0 means 20.
	MaxConns int
	// ReadConns caps the pool that serves reads; 0 means 2 × GOMAXPROCS,
	// at least 4. Reads are short and the process renders their answers,
	// so more connections than that mostly queue in the server: on a
	// 2-core machine, 16 read connections served about a third fewer
	// queries than 4, with a p99 two to three times longer
	// (docs/benchmarks.md). Raise it when the server has many more cores
	// than this process or sits far away.
	ReadConns int
}

// Open connects to the database at a postgres:// URL and checks that the
// server runs PostgreSQL 17 or newer (ErrUnsupportedServer otherwise). It
// does not migrate; call Migrate.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	if opts.MaxConns <= 0 {
		opts.MaxConns = 20
	}
	if opts.ReadConns <= 0 {
		opts.ReadConns = max(4, 2*runtime.GOMAXPROCS(0))
	}
	writer, err := openPool(url, opts.MaxConns)
	if err != nil {
		return nil, err
	}
	if err := checkServer(ctx, writer); err != nil {
		writer.Close()
		return nil, err
	}
	reader, err := openPool(url, opts.ReadConns)
	if err != nil {
		writer.Close()
		return nil, err
	}
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	return &Store{DB: sqlstore.Open(dialect{}, writer, reader, sub), url: url}, nil
}

// openPool opens a pool of at most n connections to url.
func openPool(url string, n int) (*sql.DB, error) {
	db, err := sql.Open("postgres", url)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxIdleTime(5 * time.Minute)
	return db, nil
}

// dialect is PostgreSQL's variant of the shared SQL.
type dialect struct{ sqlstore.PostgresJSON }

func (dialect) Name() string             { return "postgres" }
func (dialect) Placeholder(n int) string { return sqlstore.DollarPlaceholder(n) }
func (dialect) Time(t time.Time) any     { return sqlstore.NativeTime(t) }
func (dialect) TypedParams() bool        { return true }

func (dialect) IsUniqueViolation(err error) bool {
	var pe *pq.Error
	return errors.As(err, &pe) && pe.Code == "23505"
}

func (dialect) IsDeadlock(err error) bool {
	var pe *pq.Error
	return errors.As(err, &pe) && pe.Code == "40P01"
}

func (dialect) DBInfo(ctx context.Context, db *sqlstore.DB) (storage.DBInfo, error) {
	info := storage.DBInfo{Dialect: "postgres", FreeDiskBytes: -1}
	err := db.Reader().QueryRowContext(ctx,
		`SELECT current_database(), pg_database_size(current_database()), current_setting('server_version')`).
		Scan(&info.Location, &info.SizeBytes, &info.Version)
	if err != nil {
		return info, fmt.Errorf("database info: %w", err)
	}
	return info, nil
}

func (dialect) LockMigrations(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLockID)
	return err
}

// upsertRecords writes a whole batch in one statement from parallel arrays.
// A valid record's validation error is ” in $10 and NULL in the table.
const upsertRecords = `INSERT INTO records (uri, did, collection, rkey, cid, rev, record, indexed_at, created_at, invalid)
	SELECT u, d, c, k, ci, rv, rec::jsonb, timestamptz 'epoch' + us * interval '1 microsecond',
		timestamptz 'epoch' + cus * interval '1 microsecond', NULLIF(inv, '')
	FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[], $9::bigint[], $10::text[])
		AS t(u, d, c, k, ci, rv, rec, us, cus, inv)
	WHERE rv = '' OR NOT EXISTS (SELECT 1 FROM record_tombstones tb WHERE tb.uri = t.u AND tb.rev >= t.rv)
	` + sqlstore.RecordUpsertConflict + `
	RETURNING uri, (extract(epoch FROM created_at) * 1000000)::bigint`

func (dialect) UpsertRecords(ctx context.Context, tx *sql.Tx, recs []storage.Record) ([]sqlstore.Stored, error) {
	n := len(recs)
	uris, dids, cols, rkeys := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	cids, revs, values := make([]string, n), make([]string, n), make([][]byte, n)
	times, created, invalid := make([]int64, n), make([]int64, n), make([]string, n)
	index := make(map[string]int, n)
	for i, r := range recs {
		uris[i], dids[i], cols[i], rkeys[i] = r.URI, r.DID, r.Collection, r.RKey
		cids[i], revs[i], values[i], invalid[i] = r.CID, r.Rev, r.Value, r.Invalid
		times[i], created[i] = r.IndexedAt.UnixMicro(), r.CreatedAt.UnixMicro()
		index[r.URI] = i
	}
	rows, err := tx.QueryContext(ctx, upsertRecords, textArray[string](uris), textArray[string](dids), textArray[string](cols),
		textArray[string](rkeys), textArray[string](cids), textArray[string](revs), textArray[[]byte](values),
		pq.Array(times), pq.Array(created), textArray[string](invalid))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	stored := make([]sqlstore.Stored, 0, n)
	for rows.Next() {
		var uri string
		var micros int64
		if err := rows.Scan(&uri, &micros); err != nil {
			return nil, err
		}
		stored = append(stored, sqlstore.Stored{Index: index[uri], CreatedAt: time.UnixMicro(micros).UTC()})
	}
	return stored, rows.Err()
}

// The statements storing links (migration 0032): the targets and sources
// seen for the first time get their row in link_targets, then the links
// name theirs by id. Two statements: the second sees the targets that a
// concurrent writer added (the first waited for it on a conflict). The
// trigger on record_links keeps the counts.
const (
	addLinkTargets = `INSERT INTO link_targets (target, source)
	SELECT DISTINCT t, s FROM unnest($1::text[], $2::text[]) AS k(t, s)
	WHERE NOT EXISTS (SELECT 1 FROM link_targets lt WHERE lt.target = k.t AND lt.source = k.s)
	ORDER BY t, s
	ON CONFLICT DO NOTHING`
	insertLinks = `INSERT INTO record_links (tid, created_at, uri, did)
	SELECT lt.id, timestamptz 'epoch' + us * interval '1 microsecond', u, d
	FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[]) AS l(t, s, us, u, d)
	JOIN link_targets lt ON lt.target = l.t AND lt.source = l.s
	ON CONFLICT DO NOTHING`
)

func (dialect) InsertLinks(ctx context.Context, tx *sql.Tx, links []sqlstore.LinkRow) error {
	n := len(links)
	targets, sources, uris, dids, created := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]int64, n)
	for i, l := range links {
		targets[i], sources[i], uris[i], dids[i], created[i] = l.Target, l.Source, l.URI, l.DID, l.CreatedAt.UnixMicro()
	}
	if _, err := tx.ExecContext(ctx, addLinkTargets, textArray[string](targets), textArray[string](sources)); err != nil {
		return fmt.Errorf("link targets: %w", err)
	}
	_, err := tx.ExecContext(ctx, insertLinks, textArray[string](targets), textArray[string](sources),
		pq.Array(created), textArray[string](uris), textArray[string](dids))
	return err
}

const (
	deleteRecords = `DELETE FROM records r USING unnest($1::text[], $2::text[]) AS d(u, rv)
		WHERE r.uri = d.u AND (d.rv = '' OR r.rev = '' OR r.rev <= d.rv)`
	putTombstones = `INSERT INTO record_tombstones (uri, rev, deleted_at)
		SELECT u, rv, $3 FROM unnest($1::text[], $2::text[]) AS d(u, rv) WHERE rv <> ''
		` + sqlstore.TombstoneConflict
)

func (dialect) DeleteRecords(ctx context.Context, tx *sql.Tx, recs []storage.Record, now time.Time) error {
	uris, revs := make([]string, len(recs)), make([]string, len(recs))
	for i, r := range recs {
		uris[i], revs[i] = r.URI, r.Rev
	}
	if _, err := tx.ExecContext(ctx, deleteRecords, textArray[string](uris), textArray[string](revs)); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, putTombstones, textArray[string](uris), textArray[string](revs), sqlstore.NativeTime(now))
	return err
}

// MigrationsDigest identifies the migrations this build applies: a
// SHA-256 over their file names and contents, in hex. Tools that keep
// migrated databases to copy from, such as the test helpers' template
// database (storagetest.Postgres), key them by it, so that a changed
// migration never reuses a stale copy.
func MigrationsDigest() string {
	h := sha256.New()
	_ = fs.WalkDir(migrationFiles, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := migrationFiles.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", path, len(b))
		h.Write(b)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))
}

// LockShared implements sqlstore.Dialect.
func (dialect) LockShared() string { return " FOR SHARE" }
