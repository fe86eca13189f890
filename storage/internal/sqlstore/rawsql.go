package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/lexview/lexview/storage"
)

// defaultRawRows is the row cap of RawQuery when the caller gives none.
const defaultRawRows = 1000

// RawQuery implements storage.QueryStore. The statement passes guardRaw
// first; it then runs under the dialect's enforcement of the same
// allow-list (Dialect.RunRaw): reads in a read-only transaction on the
// reader pool, writes in a transaction on the writer. The statement is
// prepared on its own, so a driver never runs a second statement hidden in
// the text.
func (db *DB) RawQuery(ctx context.Context, stmt string, args []any, maxRows int, maxBytes int64) (storage.RawResult, error) {
	write, err := guardRaw(stmt, db.dialect.RawSyntax())
	if err != nil {
		return storage.RawResult{}, err
	}
	return db.runRaw(ctx, stmt, args, rawLimits{rows: maxRows, bytes: maxBytes}, write)
}

// rawLimits bound what a raw read returns (RawQuery's maxRows and
// maxBytes).
type rawLimits struct {
	rows  int
	bytes int64
}

// runRaw runs a statement that passed guardRaw.
func (db *DB) runRaw(ctx context.Context, stmt string, args []any, lim rawLimits, write bool) (storage.RawResult, error) {
	if lim.rows <= 0 {
		lim.rows = defaultRawRows
	}
	if lim.bytes <= 0 {
		lim.bytes = math.MaxInt64
	}
	stmt, err := db.rebindRaw(stmt)
	if err != nil {
		return storage.RawResult{}, err
	}
	pool := db.reader
	if write {
		pool = db.writer
	}
	var res storage.RawResult
	err = db.dialect.RunRaw(ctx, pool, write, func(tx *sql.Tx) error {
		var err error
		res, err = db.execRaw(ctx, tx, stmt, args, lim, write)
		return err
	})
	if err != nil {
		if errors.Is(err, storage.ErrInvalidQuery) || errors.Is(err, storage.ErrRawTooLarge) {
			return storage.RawResult{}, err
		}
		return storage.RawResult{}, fmt.Errorf("raw query: %w", err)
	}
	return res, nil
}

// execRaw prepares and runs the statement in tx and reads its result.
func (db *DB) execRaw(ctx context.Context, tx *sql.Tx, stmt string, args []any, lim rawLimits, write bool) (storage.RawResult, error) {
	prepared, err := tx.PrepareContext(ctx, stmt)
	if err != nil {
		return storage.RawResult{}, err
	}
	defer prepared.Close()

	if write {
		res, err := prepared.ExecContext(ctx, args...)
		if err != nil {
			return storage.RawResult{}, err
		}
		n, _ := res.RowsAffected()
		return storage.RawResult{Affected: n}, nil
	}

	rows, err := prepared.QueryContext(ctx, args...)
	if err != nil {
		return storage.RawResult{}, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return storage.RawResult{}, err
	}
	types, err := rows.ColumnTypes()
	if err != nil {
		return storage.RawResult{}, err
	}
	binary := make([]bool, len(cols))
	numeric := make([]bool, len(cols))
	for i, ct := range types {
		switch strings.ToUpper(ct.DatabaseTypeName()) {
		case "BYTEA", "BLOB":
			binary[i] = true
		case "NUMERIC", "DECIMAL":
			numeric[i] = true
		case "":
			binary[i] = db.dialect.Name() == "sqlite" // an expression: only blobs come as bytes
		}
	}
	res := storage.RawResult{Columns: cols, Rows: [][]any{}}
	var size int64
	for len(res.Rows) < lim.rows && rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return storage.RawResult{}, err
		}
		for i, v := range vals {
			vals[i] = rawValue(v, binary[i], numeric[i])
			n := rawSize(vals[i])
			if n > lim.bytes-size {
				return storage.RawResult{}, fmt.Errorf("%w: the rows passed %d bytes", storage.ErrRawTooLarge, lim.bytes)
			}
			size += n
		}
		res.Rows = append(res.Rows, vals)
	}
	return res, rows.Err()
}

// rawSize is what a value counts against RawQuery's maxBytes.
func rawSize(v any) int64 {
	switch x := v.(type) {
	case nil:
		return 0
	case string:
		return int64(len(x))
	case []byte:
		return int64(len(x))
	}
	return 8
}

// rawValue converts a scanned value to string, int64, float64, bool,
// []byte or nil.
func rawValue(v any, binary, numeric bool) any {
	switch x := v.(type) {
	case nil, string, int64, float64, bool:
		return x
	case []byte:
		// database/sql's Scan into *any copies a []byte already.
		switch {
		case binary:
			return x
		case numeric:
			if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
				return n
			}
			if f, err := strconv.ParseFloat(string(x), 64); err == nil {
				return f
			}
		}
		return string(x)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case float32:
		return float64(x)
	}
	return fmt.Sprint(v)
}

// rebindRaw lets scripts write "?" placeholders on every backend: each
// "?" outside literals, quoted names and comments becomes the dialect's
// n-th placeholder.
func (db *DB) rebindRaw(stmt string) (string, error) {
	toks, err := lexSQL(stmt, db.dialect.RawSyntax())
	if err != nil {
		return "", err
	}
	var b strings.Builder
	last, n := 0, 0
	for _, t := range toks {
		if t.kind != tokPunct || t.text != "?" {
			continue
		}
		n++
		b.WriteString(stmt[last:t.start])
		b.WriteString(db.dialect.Placeholder(n))
		last = t.end
	}
	if n == 0 {
		return stmt, nil
	}
	b.WriteString(stmt[last:])
	return b.String(), nil
}
