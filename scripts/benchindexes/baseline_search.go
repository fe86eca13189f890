package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The baseline's search reads the search index Lexview keeps for the
// posts' text index, with Lexview's ranking, so that its answers are
// Lexview's (storage/internal/sqlstore/search.go):
//
//   - SQLite: the FTS4 table search_fts, each match ranked by
//     lexview_search_rank (BM25 over matchinfo, registered on the
//     baseline's connections from storage/sqlite), the page's best of the
//     posts through search_docs, then their records: Lexview's statement.
//     The function's second argument is the program Lexview's fts4Match
//     writes for a query of one alternative: the columns searched (the
//     text index's slot), the number of scoring phrases, one alternative,
//     its phrases and no excluded one.
//   - PostgreSQL: search_docs' GIN index on the tsvector, each match
//     ranked by Lexview's ts_rank_cd expression (the slot's weight at 1,
//     normalization 1), the page's best first and only then their records
//     (Lexview joins the records of every match before it sorts).
//
// The slot and, on PostgreSQL, the text-search configuration of the index
// are read once at start-up. The query string is read as what the search
// kinds send: lowercase ASCII words, all of which must match, or one
// quoted phrase of them; anything else is refused.

// searchStatements are the baseline's search statements for a dialect and
// a text index's slot: the first page and the pages after a cursor.
func searchStatements(dialect string, slot int) (first, after string) {
	if dialect == "postgres" {
		weights := []string{"0", "0", "0", "0"} // D, C, B, A
		weights[3-slot] = "1"
		ranked := `SELECT d.uri, ts_rank_cd('{` + strings.Join(weights, ",") + `}', d.doc, q.q, 1)::float8 AS rank
			FROM (SELECT to_tsquery($1::regconfig, $2) AS q) q JOIN search_docs d ON d.doc @@ q.q
			WHERE d.collection = '` + collPost + `'`
		page := func(cond, limit string) string {
			return `SELECT r.uri, r.cid, r.record, s.rank FROM (
				SELECT m.uri, m.rank FROM (` + ranked + `) m` + cond + ` ORDER BY m.rank DESC, m.uri LIMIT ` + limit + `) s
			JOIN records r ON r.uri = s.uri ORDER BY s.rank DESC, s.uri`
		}
		return page("", "$3"), page(` WHERE m.rank < $3 OR m.rank = $3 AND m.uri > $4`, "$5")
	}
	page := func(cond string) string {
		return `WITH m AS MATERIALIZED (
			SELECT docid, lexview_search_rank(matchinfo(search_fts, 'pcnalx'), ?) AS rank
			FROM search_fts WHERE search_fts MATCH ?),
		t AS MATERIALIZED (
			SELECT d.uri, m.rank FROM m CROSS JOIN search_docs d ON d.docid = m.docid
			WHERE m.rank IS NOT NULL AND d.collection = '` + collPost + `'` + cond + `
			ORDER BY m.rank DESC, d.uri LIMIT ?)
		SELECT r.uri, r.cid, r.record, t.rank FROM t CROSS JOIN records r ON r.uri = t.uri
		ORDER BY t.rank DESC, t.uri`
	}
	return page(""), page(` AND (m.rank < ? OR m.rank = ? AND d.uri > ?)`)
}

// baselineSearch is the baseline's search of the posts' text.
type baselineSearch struct {
	slot        int
	config      string // PostgreSQL's text-search configuration
	first, next *sql.Stmt
}

// readSearchIndex reads the slot and configuration of the posts' text
// index.
func (b *baseline) readSearchIndex(ctx context.Context) error {
	ph := "?"
	if b.dialect == "postgres" {
		ph = "$1"
	}
	err := b.db.QueryRowContext(ctx, `SELECT s.slot, s.config FROM search_fields s JOIN field_indexes fi ON fi.id = s.index_id
		WHERE s.collection = `+ph+` AND fi.path = 'text' AND fi.state = 'ready'`, collPost).Scan(&b.search.slot, &b.search.config)
	if err != nil {
		return fmt.Errorf("the posts' text index: %w", err)
	}
	return nil
}

// prepareSearch reads the posts' text index and prepares the search
// statements.
func (b *baseline) prepareSearch(ctx context.Context) error {
	if err := b.readSearchIndex(ctx); err != nil {
		return err
	}
	s := &b.search
	first, after := searchStatements(b.dialect, s.slot)
	var err error
	if s.first, err = b.db.PrepareContext(ctx, first); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	if s.next, err = b.db.PrepareContext(ctx, after); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	return nil
}

// searchTerms reads a query of the search kinds: lowercase ASCII words,
// all of which must match, or one quoted phrase of them.
func searchTerms(q string) (terms []string, phrase, ok bool) {
	if inner, found := strings.CutPrefix(q, `"`); found {
		if q, found = strings.CutSuffix(inner, `"`); !found {
			return nil, false, false
		}
		phrase = true
	}
	terms = strings.Fields(q)
	for _, t := range terms {
		if strings.Trim(t, "abcdefghijklmnopqrstuvwxyz") != "" {
			return nil, false, false
		}
	}
	return terms, phrase, len(terms) > 0 && len(terms) <= 16
}

// searchArgs are the arguments of a query's statement but the cursor and
// the limit: on SQLite the rank's program and the MATCH expression, on
// PostgreSQL the configuration and the tsquery.
func (b *baseline) searchArgs(terms []string, phrase bool) []any {
	if b.dialect == "postgres" {
		label := string("ABCD"[b.search.slot])
		q := "'" + strings.Join(terms, "':"+label+" & '") + "':" + label
		if phrase {
			q = "('" + strings.Join(terms, "':"+label+" <-> '") + "':" + label + ")"
		}
		return []any{b.search.config, q}
	}
	// fts4Match's program: column mask, scoring phrases, one alternative,
	// its phrases (0…n-1), no excluded phrase.
	n := len(terms)
	match := `("` + strings.Join(terms, `" AND "`) + `")`
	if phrase {
		n, match = 1, `("`+strings.Join(terms, " ")+`")`
	}
	prog := []byte{1 << b.search.slot, byte(n), 1, byte(n)}
	for i := range n {
		prog = append(prog, byte(i))
	}
	return []any{append(prog, 0), match}
}

// searchPosts appends a page of the posts matching params' q, best first.
func (b *baseline) searchPosts(ctx context.Context, buf []byte, params url.Values) ([]byte, int) {
	terms, phrase, ok := searchTerms(params.Get("q"))
	limit, lok := pageLimit(params, 20)
	if !ok || !lok {
		return append(buf, errInvalidRequest...), http.StatusBadRequest
	}
	args := b.searchArgs(terms, phrase)
	stmt := b.search.first
	if c := params.Get("cursor"); c != "" {
		key, uri, ok := decodeKeyCursor(c)
		rank, err := strconv.ParseFloat(key, 64)
		if !ok || err != nil {
			return append(buf, errInvalidRequest...), http.StatusBadRequest
		}
		stmt = b.search.next
		if b.dialect == "postgres" {
			args = append(args, rank, uri)
		} else {
			args = append(args, rank, rank, uri)
		}
	}
	rows, err := stmt.QueryContext(ctx, append(args, limit+1)...)
	return b.recordPage(buf, rows, err, limit, func(dst []byte, key any) []byte {
		rank, _ := key.(float64)
		return strconv.AppendFloat(dst, rank, 'g', -1, 64)
	})
}
