package sqlstore

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/lexview/lexview/storage"
)

// SearchRecords implements storage.SearchStore.
//
// Pages are keyset pages on (rank, URI): a cursor holds the rank and URI
// of the page's last hit, and the next page starts below it. Every page
// ranks every match anyway (the best can be anywhere), so an offset would
// save nothing, and a keyset never repeats or skips a record because
// records arrived between pages. On PostgreSQL a record's rank depends on
// its own document only, so the pages are exact. On SQLite BM25 weighs a
// word by how rare it is among all documents: records written between
// pages shift every rank a little, and a record whose rank moves across
// the cursor's may be skipped or repeated.
func (db *DB) SearchRecords(ctx context.Context, q storage.SearchQuery) (storage.SearchPage, error) {
	stmt, args, limit, scope, err := db.searchStatement(ctx, q)
	if err != nil {
		return storage.SearchPage{}, err
	}
	rows, err := db.reader.QueryContext(ctx, Bind(db.dialect, stmt), args...)
	if err != nil {
		return storage.SearchPage{}, fmt.Errorf("search: %w", err)
	}
	defer rows.Close()
	page := storage.SearchPage{Hits: make([]storage.SearchHit, 0, min(limit+1, 32))}
	var sc servedScanner
	for rows.Next() {
		var h storage.SearchHit
		if h.Record, err = sc.scan(rows, &h.Rank); err != nil {
			return storage.SearchPage{}, fmt.Errorf("search: %w", err)
		}
		page.Hits = append(page.Hits, h)
	}
	if err := rows.Err(); err != nil {
		return storage.SearchPage{}, fmt.Errorf("search: %w", err)
	}
	if len(page.Hits) > limit {
		page.Hits = page.Hits[:limit]
		last := page.Hits[limit-1]
		// The one cursor format carries a time and a URI: the rank (never
		// negative) travels as the bits of its float64 in the time.
		page.Cursor = storage.EncodeCursor(scope, storage.Position{
			Time: time.UnixMicro(int64(math.Float64bits(last.Rank))), URI: last.Record.URI,
		})
	}
	return page, nil
}

// searchStatement validates q and returns the statement that searches
// for it, its arguments, the page size and the cursors' scope.
func (db *DB) searchStatement(ctx context.Context, q storage.SearchQuery) (stmt string, args []any, limit int, scope string, err error) {
	if q.Collection == "" {
		return "", nil, 0, "", invalidSearch("a collection is required")
	}
	limit = q.Limit
	switch {
	case limit <= 0:
		limit = storage.DefaultSearchLimit
	case limit > storage.MaxSearchLimit:
		return "", nil, 0, "", invalidSearch("limit must be between 1 and %d", storage.MaxSearchLimit)
	}
	expr, err := parseSearch(q.Query)
	if err != nil {
		return "", nil, 0, "", err
	}
	fields, err := db.searchFields(ctx, q.Collection)
	if err != nil {
		return "", nil, 0, "", err
	}
	slots, err := searchedSlots(q.Collection, fields, q.Fields)
	if err != nil {
		return "", nil, 0, "", err
	}
	asked := slices.Clone(q.Fields)
	slices.Sort(asked)
	scope = strings.Join(append([]string{"search", q.Collection, q.DID, q.Query}, asked...), "\x00")
	var after *searchPosition
	if q.Cursor != "" {
		pos, err := storage.DecodeCursor(scope, q.Cursor)
		rank := math.Float64frombits(uint64(pos.Time.UnixMicro()))
		if err != nil || pos.URI == "" || !(rank >= 0) || math.IsInf(rank, 0) {
			return "", nil, 0, "", badCursor()
		}
		after = &searchPosition{rank: rank, uri: pos.URI}
	}
	if db.dialect.Name() == "postgres" {
		stmt, args = tsquerySearchSQL(expr, slots, q.Collection, q.DID, q.ExcludeInvalid, after, limit+1)
	} else {
		stmt, args = fts4SearchSQL(expr, slots, q.Collection, q.DID, q.ExcludeInvalid, after, limit+1)
	}
	return stmt, args, limit, scope, nil
}

// ExplainSearch returns the database's plan of the statement that
// SearchRecords runs for q, one line per step (see ExplainQuery). For
// tests and diagnostics.
func (db *DB) ExplainSearch(ctx context.Context, q storage.SearchQuery) (string, error) {
	stmt, args, _, _, err := db.searchStatement(ctx, q)
	if err != nil {
		return "", err
	}
	return db.explain(ctx, stmt, args)
}

// flaggedExcluded leaves the collection's flagged records (those stored
// with a validation error) out of a search's matches before the page is
// cut: their URIs come from the partial index records_invalid, whose size
// is the number of flagged records, not of matches.
const flaggedExcluded = ` AND d.uri NOT IN (SELECT uri FROM records WHERE collection = ? AND invalid IS NOT NULL)`

// searchPosition is where a search page continues: below rank, or at rank
// after uri.
type searchPosition struct {
	rank float64
	uri  string
}

// fts4SearchSQL is SQLite's search statement: the FTS4 match ranked (and
// filtered, see fts4Match) by lexview_search_rank, materialized so that
// the function runs once per row; the page's best matches of the
// collection (search_docs by docid), and only then their records. CROSS
// JOIN fixes that order: left to choose, SQLite's planner may start from
// the collection's records instead, and go through all of them.
func fts4SearchSQL(e searchExpr, slots []searchSlot, collection, did string, excludeInvalid bool, after *searchPosition, limit int) (string, []any) {
	var mask byte
	for _, s := range slots {
		mask |= 1 << s.slot
	}
	match, prog := fts4Match(e, mask)
	var b strings.Builder
	b.WriteString(`WITH m AS MATERIALIZED (
		SELECT docid, ` + SearchRankFunction + `(matchinfo(search_fts, 'pcnalx'), ?) AS rank
		FROM search_fts WHERE search_fts MATCH ?),
	t AS MATERIALIZED (
		SELECT d.uri, m.rank FROM m CROSS JOIN search_docs d ON d.docid = m.docid
		WHERE m.rank IS NOT NULL AND d.collection = ?`)
	args := []any{prog, match, collection}
	if did != "" {
		b.WriteString(` AND d.did = ?`)
		args = append(args, did)
	}
	if excludeInvalid {
		b.WriteString(flaggedExcluded)
		args = append(args, collection)
	}
	if after != nil {
		b.WriteString(` AND (m.rank < ? OR m.rank = ? AND d.uri > ?)`)
		args = append(args, after.rank, after.rank, after.uri)
	}
	b.WriteString(` ORDER BY m.rank DESC, d.uri LIMIT ?)
	SELECT r.uri, r.cid, r.record, r.created_at, t.rank FROM t CROSS JOIN records r ON r.uri = t.uri
	ORDER BY t.rank DESC, t.uri`)
	return b.String(), append(args, limit)
}

// tsquerySearchSQL is PostgreSQL's search statement: the documents of
// the collection matching the query (search_docs_doc), ranked by cover
// density (ts_rank_cd, normalized by the log of the document's length)
// with the searched fields' weights at 1 and the others at 0, then their
// records.
func tsquerySearchSQL(e searchExpr, slots []searchSlot, collection, did string, excludeInvalid bool, after *searchPosition, limit int) (string, []any) {
	weights := []string{"0", "0", "0", "0"} // D, C, B, A
	for _, s := range slots {
		weights[3-s.slot] = "1"
	}
	query, args := tsqueryExpr(e, slots)
	rank := `ts_rank_cd('{` + strings.Join(weights, ",") + `}', d.doc, q.q, 1)::float8`
	var b strings.Builder
	b.WriteString(`SELECT r.uri, r.cid, r.record, r.created_at, s.rank FROM (
		SELECT d.uri, ` + rank + ` AS rank
		FROM (SELECT ` + query + ` AS q) q JOIN search_docs d ON d.doc @@ q.q
		WHERE d.collection = ?`)
	args = append(args, collection)
	if did != "" {
		b.WriteString(` AND d.did = ?`)
		args = append(args, did)
	}
	if excludeInvalid {
		b.WriteString(flaggedExcluded)
		args = append(args, collection)
	}
	// Rank, filter past the cursor and cut to the page over the index
	// alone, then fetch the page's records: joining first let the planner
	// fetch a record for every match, or scan the documents in parallel.
	if after != nil {
		b.WriteString(` AND (` + rank + ` < ? OR ` + rank + ` = ? AND d.uri > ?)`)
		args = append(args, after.rank, after.rank, after.uri)
	}
	b.WriteString(` ORDER BY rank DESC, d.uri LIMIT ?) s JOIN records r ON r.uri = s.uri ORDER BY s.rank DESC, s.uri`)
	return b.String(), append(args, limit)
}
