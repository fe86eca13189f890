package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/lexview/lexview/storage"
)

// recordQuery is a validated storage.RecordQuery, its conditions apart.
type recordQuery struct {
	q     storage.RecordQuery
	dir   string // ASC or DESC
	cmp   string // the keyset comparison: > or <
	scope string
	// didLo <= uri < didHi selects q.DID's records ("" without a DID).
	didLo, didHi string
	labels       where
	sortPath     []PathStep // nil without a field sort
}

// prepareQuery validates q (every error it returns wraps
// storage.ErrInvalidQuery) and renders its parts.
func (db *DB) prepareQuery(q storage.RecordQuery) (*recordQuery, error) {
	if q.Collection == "" {
		return nil, invalid("a collection is required")
	}
	rq := &recordQuery{q: q, dir: "DESC", cmp: "<"}
	if q.Ascending {
		rq.dir, rq.cmp = "ASC", ">"
	}
	if q.DID != "" {
		// The URI prefix at://DID/COLLECTION/ fixes both, and lets the
		// primary key find the repository's records.
		rq.didLo, rq.didHi = URIPrefixRange("at://" + q.DID + "/" + q.Collection + "/")
	}
	if q.Filter != nil {
		if _, _, err := translateFilter(db.dialect, q.Filter); err != nil {
			return nil, err
		}
	}
	if len(q.Labels) > 0 {
		terms, args, err := translateLabels(db.dialect, q.Labels, q.LabelsAt)
		if err != nil {
			return nil, err
		}
		rq.labels = where{terms: terms, args: args}
	}
	if q.Sort != "" {
		path, err := ParseFieldPath(q.Sort)
		if err != nil {
			return nil, fmt.Errorf("sort: %w", err)
		}
		rq.sortPath = path
	}
	filter, err := json.Marshal(q.Filter)
	if err != nil {
		return nil, invalid("filter: %v", err)
	}
	if len(q.Labels) > 0 {
		labels, err := json.Marshal(q.Labels)
		if err != nil {
			return nil, invalid("labels: %v", err)
		}
		filter = append(append(filter, 0), labels...)
	}
	// "records-query/created": pages by creation time since migration 12;
	// cursors of the earlier order (by indexing time) are refused.
	// "records-query/keyset": field sorts page by key since migration 30;
	// their offset cursors are refused.
	version := "records-query/created"
	if q.Sort != "" {
		version = "records-query/keyset"
	}
	rq.scope = strings.Join([]string{version, q.Collection, q.DID, q.Sort, strings.ToLower(rq.dir), string(filter)}, "\x00")
	return rq, nil
}

// queryLimit applies the default and the cap of QueryRecords page sizes.
func queryLimit(n int) int {
	if n <= 0 {
		return storage.DefaultQueryLimit
	}
	return min(n, storage.MaxQueryLimit)
}

// QueryRecords implements storage.QueryStore. It reads servedColumns
// (see servedScanner), and pages by keyset: in creation order
// (Record.CreatedAt) after the position of the last record, in a field
// sort after its key (fieldKey). Cursors are bound to the query's scope.
// The planner (plan.go) answers from a value index where one serves.
func (db *DB) QueryRecords(ctx context.Context, q storage.RecordQuery) (storage.RecordQueryPage, error) {
	rq, err := db.prepareQuery(q)
	if err != nil {
		return storage.RecordQueryPage{}, err
	}
	for attempt := 0; ; attempt++ {
		p, err := db.plan(ctx, rq)
		if err != nil {
			return storage.RecordQueryPage{}, err
		}
		page, err := db.queryPage(ctx, rq, p)
		if err != nil || len(page.Records) > 0 || attempt > 0 {
			return page, err
		}
		if again, err := db.replan(ctx, p); err != nil || !again {
			return page, err
		}
	}
}

// statement is an SQL statement and its arguments.
type statement struct {
	sql  string
	args []any
}

// pageStatements renders a page of rq as p plans it: the statements to
// run in turn, each continuing the order where the previous one ends,
// until limit+1 rows are read (one, but for a sort read from its index).
func (db *DB) pageStatements(ctx context.Context, rq *recordQuery, p plan, limit int) ([]statement, error) {
	if rq.q.Sort == "" {
		stmt, args, err := db.createdOrder(rq, p, limit)
		return []statement{{stmt, args}}, err
	}
	return db.fieldOrder(ctx, rq, p, limit)
}

// queryPage answers rq as p plans it.
func (db *DB) queryPage(ctx context.Context, rq *recordQuery, p plan) (storage.RecordQueryPage, error) {
	limit := queryLimit(rq.q.Limit)
	stmts, err := db.pageStatements(ctx, rq, p, limit)
	if err != nil {
		return storage.RecordQueryPage{}, err
	}
	query := db.reader.QueryContext
	if walksAnIndex(rq, p) {
		query = db.reads.query
	}
	page := storage.RecordQueryPage{Records: make([]storage.Record, 0, limit+1)}
	var keys []fieldKey
	var sc servedScanner
	for _, st := range stmts {
		if len(page.Records) > limit {
			break
		}
		if keys, err = db.readPage(ctx, query, st, rq, &sc, &page, keys); err != nil {
			return storage.RecordQueryPage{}, err
		}
	}
	if len(page.Records) > limit {
		page.Records = page.Records[:limit]
		last := page.Records[limit-1]
		pos := storage.Position{Time: last.CreatedAt, URI: last.URI}
		if rq.q.Sort != "" {
			pos = keys[limit-1].position()
		}
		page.Cursor = storage.EncodeCursor(rq.scope, pos)
	}
	return page, nil
}

// readPage runs st and appends its rows to page (and, for a field sort,
// their sort keys to keys).
func (db *DB) readPage(ctx context.Context, query func(context.Context, string, ...any) (*sql.Rows, error),
	st statement, rq *recordQuery, sc *servedScanner, page *storage.RecordQueryPage, keys []fieldKey) ([]fieldKey, error) {
	rows, err := query(ctx, Bind(db.dialect, st.sql), st.args...)
	if err != nil {
		return nil, fmt.Errorf("query records: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var rec storage.Record
		if rq.q.Sort == "" {
			rec, err = sc.scan(rows)
		} else {
			var k fieldKey
			rec, k, err = sc.scanKeyed(rows)
			keys = append(keys, k)
		}
		if err != nil {
			return nil, err
		}
		page.Records = append(page.Records, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("query records: %w", err)
	}
	return keys, nil
}

// walksAnIndex reports whether the statement of rq as p plans it walks
// one index whatever its arguments' values: an unfiltered listing in
// creation order, one driven by an indexed equality alone, or a sort read
// from its index (with conditions on the sorted field only). Such
// statements run prepared. A prepared statement may be planned without
// its parameters' values (PostgreSQL switches to such a generic plan
// after five runs); that is harmless for a walk of an index, but a
// filter's selectivity (a LIKE prefix, a range) is exactly what the
// planner needs the values for.
func walksAnIndex(rq *recordQuery, p plan) bool {
	if len(rq.labels.terms) > 0 || p.residual != nil {
		return false
	}
	if p.sortIndex != 0 {
		return true
	}
	return rq.q.Sort == "" && (p.drive == nil || p.drive.conds[0].op == "=")
}

// createdOrder renders a page in creation order: from the records, or
// from the entries of the index that drives the filter.
func (db *DB) createdOrder(rq *recordQuery, p plan, limit int) (string, []any, error) {
	from, w, err := db.source(rq, p, true)
	if err != nil {
		return "", nil, err
	}
	created, uri := `created_at`, `uri`
	if p.entries() {
		created, uri = `v.rec_created`, `v.rec_uri`
	}
	if rq.q.Cursor != "" {
		pos, err := storage.DecodeCursor(rq.scope, rq.q.Cursor)
		if err != nil || pos.URI == "" {
			return "", nil, badCursor()
		}
		t := db.dialect.Time(pos.Time)
		if rq.q.Ascending {
			w.add(created+` >= ? AND (`+created+` > ? OR `+uri+` > ?)`, t, t, pos.URI)
		} else {
			w.add(created+` <= ? AND (`+created+` < ? OR `+uri+` < ?)`, t, t, pos.URI)
		}
	}
	stmt := `SELECT ` + servedColumns + ` FROM ` + from + ` WHERE ` + w.sql() +
		` ORDER BY ` + created + ` ` + rq.dir + `, ` + uri + ` ` + rq.dir + ` LIMIT ?`
	return stmt, append(w.args, limit+1), nil
}

// fieldOrder renders a page of a field sort, after the cursor's key.
func (db *DB) fieldOrder(ctx context.Context, rq *recordQuery, p plan, limit int) ([]statement, error) {
	var after *fieldKey
	if rq.q.Cursor != "" {
		pos, err := storage.DecodeCursor(rq.scope, rq.q.Cursor)
		if err != nil {
			return nil, badCursor()
		}
		k, lookup, err := parseFieldKey(pos)
		if err != nil {
			return nil, err
		}
		if lookup {
			if k, err = db.lookupKey(ctx, rq.sortPath, k); err != nil {
				return nil, err
			}
		}
		after = &k
	}
	if p.sortIndex != 0 {
		return db.fieldOrderIndexed(rq, p, after, limit)
	}
	from, w, err := db.source(rq, p, true)
	if err != nil {
		return nil, err
	}
	field := db.dialect.JSONField(rq.sortPath)
	if after != nil {
		keysetScan(db.dialect, field, *after, rq.cmp, &w)
	}
	keys := fieldValueColumns(field)
	order := sortKeys(db.dialect, field, rq.dir)
	stmt := `SELECT ` + servedColumns + `, ` + keys.SQL + ` FROM ` + from + ` WHERE ` + w.sql() +
		` ORDER BY ` + order.SQL + ` LIMIT ?`
	args := append(append(append(keys.Args, w.args...), order.Args...), limit+1)
	return []statement{{stmt, args}}, nil
}

// fieldOrderIndexed renders a page of a field sort from the sort field's
// value index: one statement per sort group from the cursor's on (the
// groups ascend whatever the direction), each reading its group's entries
// in order after the cursor (field_index_number_order, whose str is NULL,
// for groups 0, 2 and 3; field_index_string_order for group 1). They run
// in turn until the page is full: a field whose values are of one type
// (the usual case) is read by one statement, and no rows are copied to be
// merged.
func (db *DB) fieldOrderIndexed(rq *recordQuery, p plan, after *fieldKey, limit int) ([]statement, error) {
	source, base, err := db.source(rq, p, true)
	if err != nil {
		return nil, err
	}
	first := 0
	if after != nil {
		first = after.grp
	}
	var branches []statement
	for g := first; g <= 3; g++ {
		if p.drive != nil && p.drive.grp != g {
			continue // the conditions on the field select one group
		}
		w := where{}
		w.addAll(base)
		// The key columns the branch's index holds, the others constant:
		// the index then covers what the branch reads of the entries.
		// (Typed NULLs: PostgreSQL types an untyped one text.)
		col, keys := `v.num`, strconv.Itoa(g)+` AS k_grp, v.num AS k_num, CAST(NULL AS TEXT)`+db.dialect.Bytewise()+` AS k_str`
		index := `field_index_number_order`
		switch g {
		case 1:
			col, keys = `v.str`, `1 AS k_grp, CAST(NULL AS NUMERIC) AS k_num, v.str AS k_str`
			index = `field_index_string_order`
			w.add(`v.grp = 1 AND v.str IS NOT NULL`)
		case 3:
			w.add(`v.grp = 3 AND v.str IS NULL AND v.num IS NULL`)
		default:
			w.add(`v.grp = ` + strconv.Itoa(g) + ` AND v.str IS NULL`)
		}
		if after != nil && after.grp == g {
			keysetIndexed(*after, rq.cmp, &w)
		}
		from := source
		if db.dialect.Name() == "sqlite" {
			// The branch walks its group in order for LIMIT rows; SQLite,
			// without statistics, may otherwise judge the primary key
			// cheaper and walk every entry.
			from = strings.Replace(source, `field_index_values v`, `field_index_values v INDEXED BY `+index, 1)
		}
		branches = append(branches, statement{`SELECT ` + servedColumns + `, ` + keys + ` FROM ` + from +
			` WHERE ` + w.sql() + ` ORDER BY ` + col + ` ` + rq.dir + `, v.rec_uri ` + rq.dir + ` LIMIT ?`,
			append(w.args, limit+1)})
	}
	// None when the cursor is past the one group the filter selects.
	return branches, nil
}

func badCursor() error {
	return fmt.Errorf("%w: %w", storage.ErrInvalidQuery, storage.ErrInvalidCursor)
}

// CountMatching implements storage.QueryStore, from a value index where
// one serves the filter (from the entries alone when it serves all of it).
func (db *DB) CountMatching(ctx context.Context, q storage.RecordQuery) (int64, error) {
	rq, err := db.prepareQuery(q)
	if err != nil {
		return 0, err
	}
	rq.q.Sort = "" // a count has no order
	for attempt := 0; ; attempt++ {
		p, err := db.plan(ctx, rq)
		if err != nil {
			return 0, err
		}
		if l := p.link; l != nil && l.sole && !l.marked && len(rq.labels.terms) == 0 && rq.didLo == "" {
			// Every link to the target from the field is a record whose
			// field holds it, and the index keeps their number: flagged
			// records included, so only when none is to be left out.
			if l.records == 0 {
				return 0, nil
			}
			flagged, err := db.anyFlagged(ctx, rq)
			if err != nil {
				return 0, err
			}
			if !flagged {
				return l.records, nil
			}
		}
		stmt, args, err := db.countStatement(rq, p)
		if err != nil {
			return 0, err
		}
		var n int64
		query := db.reader.QueryRowContext
		if p.drive != nil && walksAnIndex(rq, p) {
			query = db.reads.queryRow
		}
		if err := query(ctx, Bind(db.dialect, stmt), args...).Scan(&n); err != nil {
			return 0, fmt.Errorf("count matching records: %w", err)
		}
		if n > 0 || attempt > 0 {
			return n, nil
		}
		if again, err := db.replan(ctx, p); err != nil || !again {
			return n, err
		}
	}
}

// anyFlagged reports whether rq leaves out flagged records and its
// collection holds any.
func (db *DB) anyFlagged(ctx context.Context, rq *recordQuery) (bool, error) {
	if !rq.q.ExcludeInvalid {
		return false, nil
	}
	var n int
	if err := db.reads.queryRow(ctx, db.q.anyFlagged, rq.q.Collection).Scan(&n); err != nil {
		return false, fmt.Errorf("look for flagged records: %w", err)
	}
	return n > 0, nil
}

// countStatement renders the count of a query as p plans it.
func (db *DB) countStatement(rq *recordQuery, p plan) (string, []any, error) {
	from, w, err := db.source(rq, p, false)
	if err != nil {
		return "", nil, err
	}
	return `SELECT COUNT(*) FROM ` + from + ` WHERE ` + w.sql(), w.args, nil
}

// GetRecords implements storage.QueryStore with one IN query.
func (db *DB) GetRecords(ctx context.Context, uris []string) (map[string]storage.Record, error) {
	if len(uris) > storage.MaxGetRecords {
		return nil, invalid("at most %d URIs per call, got %d", storage.MaxGetRecords, len(uris))
	}
	out := make(map[string]storage.Record, len(uris))
	seen := make(map[string]bool, len(uris))
	args := make([]any, 0, len(uris))
	for _, u := range uris {
		if !seen[u] {
			seen[u] = true
			args = append(args, u)
		}
	}
	if len(args) == 0 {
		return out, nil
	}
	q := `SELECT ` + recordColumns + ` FROM records WHERE uri IN (?` + strings.Repeat(`, ?`, len(args)-1) + `)`
	rows, err := db.reader.QueryContext(ctx, Bind(db.dialect, q), args...)
	if err != nil {
		return nil, fmt.Errorf("get records: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		rec, err := scanRecord(rows)
		if err != nil {
			return nil, err
		}
		out[rec.URI] = rec
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("get records: %w", err)
	}
	return out, nil
}
