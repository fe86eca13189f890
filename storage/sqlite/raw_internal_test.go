package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestRawAuthorizerIsScoped: the raw-SQL authorizer holds a statement run
// through RunRaw, and the connection (the only one of each pool here) goes
// back to the pool without it, whether fn returns, fails, panics or its
// context ends; and without an open transaction.
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
		}
		d := dialect{}
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
