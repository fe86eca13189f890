package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/lib/pq"

	"github.com/lexview/lexview/storage/internal/sqlstore"
)

func (dialect) RawSyntax() sqlstore.Syntax { return sqlstore.SyntaxPostgres }

// rawSetup starts a raw statement's transaction: standard-conforming
// strings (the lexical rules the raw-statement guard assumes, whatever the
// server's configuration) and the restricted role named in
// script_sql_role, when it exists and the connecting user may switch to
// it (migration 0011 creates it when the user may create roles). The role
// can read records, record_tombstones and lexicon_info and write records,
// nothing else. Both last until the end of the transaction.
const rawSetup = `SELECT set_config('standard_conforming_strings', 'on', true),
	(SELECT set_config('role', r.rolname, true)
	   FROM script_sql_role s JOIN pg_roles r ON r.rolname = s.role_name
	  WHERE pg_has_role(r.oid, 'SET'))`

// RunRaw runs fn in a transaction on pool, READ ONLY for a read, under the
// restricted role when there is one (rawSetup); the guard's allow-list
// (sqlstore's rawguard.go) is the other layer, and the only one on a
// database without the role. SET LOCAL settings end with the transaction,
// so the connection goes back to the pool as it was.
func (dialect) RunRaw(ctx context.Context, pool *sql.DB, write bool, fn func(tx *sql.Tx) error) error {
	tx, err := pool.BeginTx(ctx, &sql.TxOptions{ReadOnly: !write})
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	var conforming string
	var role sql.NullString
	if err := tx.QueryRowContext(ctx, rawSetup).Scan(&conforming, &role); err != nil {
		return fmt.Errorf("set up: %w", err)
	}
	if err := fn(tx); err != nil {
		var pe *pq.Error
		if errors.As(err, &pe) {
			switch pe.Code {
			case "42501": // insufficient_privilege
				return sqlstore.RawRefused("%s", pe.Message)
			case "25006": // read_only_sql_transaction
				return sqlstore.RawRefused("a read may not write (%s)", pe.Message)
			}
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
