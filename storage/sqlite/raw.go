package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/mattn/go-sqlite3"

	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/internal/sqlstore"
)

func (dialect) RawSyntax() sqlstore.Syntax { return sqlstore.SyntaxSQLite }

// RunRaw runs fn in a transaction on a connection of pool (the query-only
// readers for a read, the writer for a write) while a SQLite authorizer
// holds the statement to the raw-SQL allow-list, and while the
// connection's length limit (SQLITE_LIMIT_LENGTH) is storage.MaxRawValue:
// a string or blob longer than that, in the result or along the way
// (randomblob(2e8), group_concat over many rows), fails the statement
// inside SQLite before it is allocated, with storage.ErrRawTooLarge.
// SQLite consults the authorizer when it compiles a statement, so the
// authorizer is installed after BEGIN and removed, and the previous limit
// restored, before COMMIT or ROLLBACK, once fn has closed its statement;
// the connection goes back to the pool without them, even when fn fails
// or panics. No statement cache is configured on the connections
// (go-sqlite3's _stmt_cache_size): a statement compiled earlier without
// the authorizer could otherwise be reused.
func (dialect) RunRaw(ctx context.Context, pool *sql.DB, write bool, fn func(tx *sql.Tx) error) error {
	conn, err := pool.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	relations, err := schemaRelations(ctx, tx)
	if err != nil {
		return err
	}
	auth := &rawAuthorizer{write: write, relations: relations}
	if err := setAuthorizer(conn, auth.decide); err != nil {
		return err
	}
	err = func() error {
		defer func() { _ = setAuthorizer(conn, nil) }()
		limit, err := setLengthLimit(conn, storage.MaxRawValue)
		if err != nil {
			return err
		}
		defer func() { _, _ = setLengthLimit(conn, limit) }()
		return fn(tx)
	}()
	if err != nil {
		// SQLite stops compiling at the first action refused: the
		// statement failed because of it.
		if auth.refusal != "" {
			return sqlstore.RawRefused("%s", auth.refusal)
		}
		if se := (sqlite3.Error{}); errors.As(err, &se) && se.Code == sqlite3.ErrTooBig {
			return fmt.Errorf("%w: a string or blob would pass %d bytes", storage.ErrRawTooLarge, storage.MaxRawValue)
		}
		return err
	}
	if write {
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
	}
	return nil
}

// setAuthorizer installs (or, with nil, removes) the authorizer of the
// connection.
func setAuthorizer(conn *sql.Conn, fn func(op int, arg1, arg2, db string) int) error {
	return conn.Raw(func(dc any) error {
		c, ok := dc.(*sqlite3.SQLiteConn)
		if !ok {
			return fmt.Errorf("sqlite: unexpected driver connection %T", dc)
		}
		c.RegisterAuthorizer(fn)
		return nil
	})
}

// setLengthLimit sets the connection's SQLITE_LIMIT_LENGTH and returns
// the previous value.
func setLengthLimit(conn *sql.Conn, limit int) (previous int, err error) {
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(*sqlite3.SQLiteConn)
		if !ok {
			return fmt.Errorf("sqlite: unexpected driver connection %T", dc)
		}
		previous = c.SetLimit(sqlite3.SQLITE_LIMIT_LENGTH, limit)
		return nil
	})
	return previous, err
}

// sqliteRecursive is SQLITE_RECURSIVE (a recursive common table
// expression), which go-sqlite3 does not export.
const sqliteRecursive = 33

// schemaRelations lists the tables and views of the database, lowercased.
func schemaRelations(ctx context.Context, tx *sql.Tx) (map[string]bool, error) {
	rows, err := tx.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type IN ('table', 'view')
		UNION ALL SELECT name FROM sqlite_temp_schema WHERE type IN ('table', 'view')`)
	if err != nil {
		return nil, fmt.Errorf("list relations: %w", err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, fmt.Errorf("list relations: %w", err)
		}
		out[strings.ToLower(name)] = true
	}
	return out, rows.Err()
}

// rawAuthorizer decides, action by action, what a raw statement may do,
// and remembers why it refused the first action it refused.
type rawAuthorizer struct {
	write bool
	// relations are the tables and views of the database: SQLite reports
	// a FROM item none of whose columns is read (COUNT(*) FROM x) as a
	// read of column "" of x, whether x is a table or the statement's own
	// common table expression; only the former must be on the allow-list.
	relations map[string]bool
	refusal   string
}

func (a *rawAuthorizer) decide(op int, arg1, arg2, db string) int {
	if a.allows(op, arg1, arg2, db) {
		return sqlite3.SQLITE_OK
	}
	if a.refusal == "" {
		a.refusal = a.explain(op, arg1, arg2)
	}
	return sqlite3.SQLITE_DENY
}

func (a *rawAuthorizer) allows(op int, arg1, arg2, db string) bool {
	switch op {
	case sqlite3.SQLITE_SELECT, sqliteRecursive:
		return true
	case sqlite3.SQLITE_READ:
		if db != "main" && db != "" {
			return false
		}
		return sqlstore.RawReadable(arg1, arg2) || arg2 == "" && db == "" && a.commonTable(arg1) ||
			a.write && sqlstore.RawTriggerTable(arg1)
	case sqlite3.SQLITE_FUNCTION:
		return sqlstore.RawSQLiteFunction(arg2)
	case sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE:
		return a.write && db == "main" && (arg1 == sqlstore.RawWriteTable || sqlstore.RawTriggerTable(arg1))
	case sqlite3.SQLITE_TRANSACTION:
		// database/sql rolls the transaction back by itself when the
		// context ends, possibly before RunRaw removes the authorizer.
		// (It then discards a go-sqlite3 connection, which cannot reset
		// its session; a ROLLBACK refused would leave a kept one inside
		// the transaction.)
		return arg1 == "ROLLBACK"
	}
	return false
}

// commonTable reports whether name, read without columns and without a
// schema, can only be a common table expression: no table or view has
// that name, and it is no system or eponymous virtual table (sqlite_*,
// pragma_*, ...; json_each and json_tree are allowed anyway).
func (a *rawAuthorizer) commonTable(name string) bool {
	name = strings.ToLower(name)
	return !a.relations[name] && !strings.HasPrefix(name, "sqlite_") && !strings.HasPrefix(name, "pragma_") &&
		name != "dbstat" && name != "fts3tokenize"
}

func (a *rawAuthorizer) explain(op int, arg1, arg2 string) string {
	switch op {
	case sqlite3.SQLITE_READ:
		if arg2 == "" {
			return fmt.Sprintf("%s is not a relation scripts may read", arg1)
		}
		return fmt.Sprintf("%s.%s is not readable by scripts", arg1, arg2)
	case sqlite3.SQLITE_FUNCTION:
		return fmt.Sprintf("function %s is not available to scripts", arg2)
	case sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE:
		if !a.write {
			return "a read may not write"
		}
		return fmt.Sprintf("a write may only change the %s table, not %s", sqlstore.RawWriteTable, arg1)
	case sqlite3.SQLITE_PRAGMA:
		return "PRAGMA is not allowed"
	case sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH:
		return "ATTACH and DETACH are not allowed"
	case sqlite3.SQLITE_TRANSACTION, sqlite3.SQLITE_SAVEPOINT:
		return "transaction control is not allowed"
	}
	return fmt.Sprintf("schema changes and other statements are not allowed (SQLite action %d)", op)
}
