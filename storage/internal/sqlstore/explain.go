package sqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/lexview/lexview/storage"
)

// ExplainQuery returns the database's plan of the statement that
// QueryRecords (or, with count, CountMatching) runs for q, one line per
// step: EXPLAIN QUERY PLAN on SQLite, EXPLAIN on PostgreSQL. It shows
// whether a value index serves the query. For tests and diagnostics.
func (db *DB) ExplainQuery(ctx context.Context, q storage.RecordQuery, count bool) (string, error) {
	rq, err := db.prepareQuery(q)
	if err != nil {
		return "", err
	}
	if count {
		rq.q.Sort = ""
	}
	p, err := db.plan(ctx, rq)
	if err != nil {
		return "", err
	}
	if count {
		stmt, args, err := db.countStatement(rq, p)
		if err != nil {
			return "", err
		}
		return db.explain(ctx, stmt, args)
	}
	stmts, err := db.pageStatements(ctx, rq, p, queryLimit(q.Limit))
	if err != nil {
		return "", err
	}
	var plans []string
	for _, st := range stmts {
		plan, err := db.explain(ctx, st.sql, st.args)
		if err != nil {
			return "", err
		}
		plans = append(plans, plan)
	}
	return strings.Join(plans, "\n-- then, until the page is full:\n"), nil
}

// explain returns the database's plan of stmt run with args, one line
// per step.
func (db *DB) explain(ctx context.Context, stmt string, args []any) (string, error) {
	explain := `EXPLAIN `
	if db.dialect.Name() == "sqlite" {
		explain = `EXPLAIN QUERY PLAN `
	}
	rows, err := db.reader.QueryContext(ctx, explain+Bind(db.dialect, stmt), args...)
	if err != nil {
		return "", fmt.Errorf("explain: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return "", fmt.Errorf("explain: %w", err)
		}
		// The step's text is the last column (SQLite's detail, PostgreSQL's
		// only one).
		fmt.Fprintf(&b, "%s\n", vals[len(vals)-1])
	}
	return b.String(), rows.Err()
}
