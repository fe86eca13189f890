package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"testing"

	"github.com/lexview/lexview/storage"
)

// TestRawAuthorizerIsScoped: the raw-SQL authorizer and the length limit
// hold a statement run through RunRaw, and the connection (the only one
// of each pool here) goes back to the pool without them, whether fn
// returns, fails, panics or its context ends; and without an open
// transaction.
func TestRawAuthorizerIsScoped(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "raw.db"), Options{Readers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	catalog := func(ctx context.Context, q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) error {
		var n int
		return q.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master`).Scan(&n)
	}
	for _, pool := range []struct {
		name  string
		db    *sql.DB
		write bool
	}{{"reader", s.Reader(), false}, {"writer", s.Writer(), true}} {
		unrestricted := func(when string) {
			t.Helper()
			if err := catalog(ctx, pool.db); err != nil {
				t.Fatalf("%s %s: the connection kept the authorizer: %v", pool.name, when, err)
			}
			tx, err := pool.db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatalf("%s %s: the connection is still in a transaction: %v", pool.name, when, err)
			}
			_ = tx.Rollback()
			var n int64
			if err := pool.db.QueryRowContext(ctx, `SELECT length(zeroblob(?))`, storage.MaxRawValue+1).Scan(&n); err != nil {
				t.Fatalf("%s %s: the connection kept the length limit: %v", pool.name, when, err)
			}
		}
		d := dialect{}
		tooLong := func(tx *sql.Tx) error {
			var n int64
			return tx.QueryRowContext(ctx, `SELECT length(randomblob(?))`, storage.MaxRawValue+1).Scan(&n)
		}
		if err := d.RunRaw(ctx, pool.db, pool.write, tooLong); !errors.Is(err, storage.ErrRawTooLarge) {
			t.Fatalf("%s: a blob past the limit: %v", pool.name, err)
		}
		unrestricted("after a value too long")
		if err := d.RunRaw(ctx, pool.db, pool.write, func(tx *sql.Tx) error {
			var n int64
			return tx.QueryRowContext(ctx, `SELECT length(randomblob(?))`, storage.MaxRawValue).Scan(&n)
		}); err != nil {
			t.Fatalf("%s: a blob at the limit: %v", pool.name, err)
		}
		err := d.RunRaw(ctx, pool.db, pool.write, func(tx *sql.Tx) error { return catalog(ctx, tx) })
		if err == nil || !strings.Contains(err.Error(), "sqlite_master") {
			t.Fatalf("%s: catalog read under the authorizer: %v", pool.name, err)
		}
		unrestricted("after a refusal")

		boom := errors.New("boom")
		if err := d.RunRaw(ctx, pool.db, pool.write, func(*sql.Tx) error { return boom }); !errors.Is(err, boom) {
			t.Fatalf("%s: %v", pool.name, err)
		}
		unrestricted("after an error")

		func() {
			defer func() {
				if recover() == nil {
					t.Fatalf("%s: the panic was swallowed", pool.name)
				}
			}()
			_ = d.RunRaw(ctx, pool.db, pool.write, func(*sql.Tx) error { panic("boom") })
		}()
		unrestricted("after a panic")

		cctx, cancel := context.WithCancel(ctx)
		_ = d.RunRaw(cctx, pool.db, pool.write, func(tx *sql.Tx) error {
			cancel()
			<-cctx.Done()
			return cctx.Err()
		})
		unrestricted("after a cancelled context")
	}
}

// TestRawValueTooLongIsNotBuilt: a raw statement asking SQLite for a
// 200 MB blob fails inside SQLite: neither SQLite nor the driver builds
// it (the Go heap grows by far less).
func TestRawValueTooLongIsNotBuilt(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "raw.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	before := heapAllocs()
	_, err = s.RawQuery(ctx, `SELECT randomblob(?)`, []any{int64(2e8)}, 10, 0)
	if allocated := heapAllocs() - before; allocated > 16<<20 {
		t.Fatalf("the heap allocated %d MiB", allocated>>20)
	}
	if !errors.Is(err, storage.ErrRawTooLarge) {
		t.Fatal(err)
	}
}

// heapAllocs reads the bytes the Go heap has allocated so far.
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
