package main

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/scripts/internal/benchkit"
	"github.com/lexview/lexview/storage"
)

// explainer is the store's diagnostic of the planner (sqlstore's
// ExplainQuery and ExplainSearch), when the build has one.
type explainer interface {
	ExplainQuery(ctx context.Context, q storage.RecordQuery, count bool) (string, error)
	ExplainSearch(ctx context.Context, q storage.SearchQuery) (string, error)
}

// printPlans prints the database's plans of the statements both servers
// run for the kinds' requests: the baseline's statements with the plan's
// arguments (Lexview's backlink count and page are the same statements,
// see storage/internal/sqlstore/links.go) and, through the
// store's ExplainQuery and ExplainSearch, Lexview's db.query and
// db.search statements (searches: the plan's first query of one word).
func printPlans(ctx context.Context, dbURL string, p *plan) error {
	db, dialect, err := benchkit.OpenBaselineDB(dbURL) // with the search functions
	if err != nil {
		return err
	}
	defer db.Close()
	q := baselineSQL[dialect]
	explain := "EXPLAIN QUERY PLAN "
	if dialect == "postgres" {
		explain = "EXPLAIN (ANALYZE, BUFFERS) "
	}
	popular := p.popular[0].uri
	steps := []struct {
		name, stmt string
		args       []any
	}{
		{"baseline and Lexview: backlink count of the most liked post", q.linkCount, []any{popular, sourceLike}},
		{"baseline and Lexview: backlinks first page of the most liked post (Lexview reads the target's id first)", q.linkFirst, []any{popular, sourceLike, 17}},
		{"baseline query-eq (lang=en)", q.langFirst, []any{"en", 21}},
		{"baseline sort-deep (first page)", q.timeFirst, []any{51}},
	}
	word := p.searches[slices.IndexFunc(p.searches, func(s search) bool { return s.shape == searchWord })].q
	b := &baseline{dialect: dialect, db: db}
	if err := b.readSearchIndex(ctx); err != nil {
		return err
	}
	searchFirst, _ := searchStatements(dialect, b.search.slot)
	steps = append(steps, struct {
		name, stmt string
		args       []any
	}{"baseline search (" + word + ")", searchFirst, append(b.searchArgs([]string{word}, false), 21)})
	for _, s := range steps {
		if err := printPlan(ctx, db, s.name, explain+s.stmt, s.args...); err != nil {
			return err
		}
	}
	store, err := appview.OpenStore(ctx, dbURL)
	if err != nil {
		return err
	}
	defer store.Close()
	ex, ok := store.(explainer)
	if !ok {
		fmt.Println("(this build's store cannot explain db.query)")
		return nil
	}
	deep := storage.RecordQuery{Collection: collPost, Sort: "createdAt", Limit: 100}
	for range 5 { // a cursor a few pages in
		page, err := store.QueryRecords(ctx, deep)
		if err != nil {
			return err
		}
		deep.Cursor = page.Cursor
	}
	deep.Limit = 50
	for _, s := range []struct {
		name string
		q    storage.RecordQuery
	}{
		{"Lexview query-eq (lang=en)", storage.RecordQuery{Collection: collPost, Limit: 20, Filter: &storage.Filter{Field: "langs[0]", Op: "=", Value: "en"}}},
		{"Lexview sort-deep (after 500 posts)", deep},
	} {
		out, err := ex.ExplainQuery(ctx, s.q, false)
		if err != nil {
			return err
		}
		fmt.Printf("-- %s:\n%s\n", s.name, indent(out))
	}
	out, err := ex.ExplainSearch(ctx, storage.SearchQuery{Collection: collPost, Query: word, Limit: 20})
	if err != nil {
		return err
	}
	fmt.Printf("-- Lexview search (%s):\n%s\n", word, indent(out))
	return nil
}

// printPlan prints the plan of one statement.
func printPlan(ctx context.Context, db *sql.DB, name, stmt string, args ...any) error {
	rows, err := db.QueryContext(ctx, stmt, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	var b strings.Builder
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s\n", vals[len(vals)-1])
	}
	fmt.Printf("-- %s:\n%s\n", name, indent(b.String()))
	return rows.Err()
}

func indent(s string) string {
	return "   " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n   ")
}
