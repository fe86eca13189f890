package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"sync/atomic"
)

// maxPrepared bounds the statements a stmtCache keeps prepared: the hot
// statements and the unfiltered listings QueryRecords builds.
const maxPrepared = 64

// stmtCache keeps read statements prepared on a pool: database/sql then
// prepares each once per connection, on first use there, instead of on
// every call. A statement is prepared on its first use, after migrations
// have created what it reads.
type stmtCache struct {
	pool  *sql.DB
	stmts sync.Map // query text → *sql.Stmt
	n     atomic.Int32
	mu    sync.Mutex // serialises preparing and closing
	done  bool
}

// query runs a prepared query on the pool (preparing it on first use),
// or, once the cache is full, an unprepared one.
func (c *stmtCache) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	stmt, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	if stmt == nil {
		return c.pool.QueryContext(ctx, query, args...)
	}
	return stmt.QueryContext(ctx, args...)
}

// queryRow is query for a single row.
func (c *stmtCache) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	stmt, err := c.stmt(ctx, query)
	if err != nil || stmt == nil {
		return c.pool.QueryRowContext(ctx, query, args...)
	}
	return stmt.QueryRowContext(ctx, args...)
}

// stmt returns the prepared statement of query, preparing it if the cache
// has room; nil (and no error) when it has none.
func (c *stmtCache) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if s, ok := c.stmts.Load(query); ok {
		return s.(*sql.Stmt), nil
	}
	if c.n.Load() >= maxPrepared {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.stmts.Load(query); ok {
		return s.(*sql.Stmt), nil
	}
	if c.done || c.n.Load() >= maxPrepared {
		return nil, nil
	}
	s, err := c.pool.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.stmts.Store(query, s)
	c.n.Add(1)
	return s, nil
}

// close closes every prepared statement.
func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done = true
	var errs []error
	c.stmts.Range(func(k, v any) bool {
		errs = append(errs, v.(*sql.Stmt).Close())
		c.stmts.Delete(k)
		return true
	})
	return errors.Join(errs...)
}
