package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/lexview/lexview/storage"
)

// maxQueryOffset bounds the offset a field-sort cursor may carry.
const maxQueryOffset = 1 << 30

// recordQuery is a validated storage.RecordQuery rendered as SQL parts.
type recordQuery struct {
	where []string
	args  []any
	scope string
}

// prepareQuery validates q and renders its scope (collection, DID,
// filter) as WHERE terms.
func (db *DB) prepareQuery(q storage.RecordQuery) (*recordQuery, error) {
	if q.Collection == "" {
		return nil, invalid("a collection is required")
	}
	rq := &recordQuery{where: []string{`collection = ?`}, args: []any{q.Collection}}
	if q.DID != "" {
		// The URI prefix at://DID/COLLECTION/ fixes both, and lets the
		// primary key find the repository's records.
		lo, hi := URIPrefixRange("at://" + q.DID + "/" + q.Collection + "/")
		rq.where = []string{`uri >= ?`, `uri < ?`}
		rq.args = []any{lo, hi}
	}
	if q.Filter != nil {
		cond, args, err := translateFilter(db.dialect, q.Filter)
		if err != nil {
			return nil, err
		}
		rq.where = append(rq.where, cond)
		rq.args = append(rq.args, args...)
	}
	if len(q.Labels) > 0 {
		terms, args, err := translateLabels(db.dialect, q.Labels, q.LabelsAt)
		if err != nil {
			return nil, err
		}
		rq.where = append(rq.where, terms...)
		rq.args = append(rq.args, args...)
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
	dir := "desc"
	if q.Ascending {
		dir = "asc"
	}
	// "records-query/created": pages by creation time since migration 12;
	// cursors of the earlier order (by indexing time) are refused.
	rq.scope = strings.Join([]string{"records-query/created", q.Collection, q.DID, q.Sort, dir, string(filter)}, "\x00")
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
// (see servedScanner). Sorting by creation time
// (Record.CreatedAt) uses keyset cursors (the position of the last record); sorting by a field
// uses offset cursors. Both are bound to the query's scope.
func (db *DB) QueryRecords(ctx context.Context, q storage.RecordQuery) (storage.RecordQueryPage, error) {
	rq, err := db.prepareQuery(q)
	if err != nil {
		return storage.RecordQueryPage{}, err
	}
	limit := queryLimit(q.Limit)
	dir := "DESC"
	if q.Ascending {
		dir = "ASC"
	}
	var order string
	var orderArgs []any
	offset := 0
	if q.Sort == "" {
		order = `created_at ` + dir + `, uri ` + dir
		if q.Cursor != "" {
			pos, err := storage.DecodeCursor(rq.scope, q.Cursor)
			if err != nil || pos.URI == "" {
				return storage.RecordQueryPage{}, badCursor()
			}
			t := db.dialect.Time(pos.Time)
			if q.Ascending {
				rq.where = append(rq.where, `created_at >= ? AND (created_at > ? OR uri > ?)`)
			} else {
				rq.where = append(rq.where, `created_at <= ? AND (created_at < ? OR uri < ?)`)
			}
			rq.args = append(rq.args, t, t, pos.URI)
		}
	} else {
		path, err := ParseFieldPath(q.Sort)
		if err != nil {
			return storage.RecordQueryPage{}, fmt.Errorf("sort: %w", err)
		}
		keys := sortKeys(db.dialect, db.dialect.JSONField(path), dir)
		order, orderArgs = keys.SQL, keys.Args
		if q.Cursor != "" {
			pos, err := storage.DecodeCursor(rq.scope, q.Cursor)
			if err != nil || pos.URI != "" || pos.Time.UnixMicro() <= 0 || pos.Time.UnixMicro() > maxQueryOffset {
				return storage.RecordQueryPage{}, badCursor()
			}
			offset = int(pos.Time.UnixMicro())
		}
	}
	stmt := `SELECT ` + servedColumns + ` FROM records WHERE ` + strings.Join(rq.where, ` AND `) +
		` ORDER BY ` + order + ` LIMIT ?`
	args := append(append(rq.args, orderArgs...), limit+1)
	if offset > 0 {
		stmt += ` OFFSET ?`
		args = append(args, offset)
	}
	// Only unfiltered listings in creation order run prepared. A prepared
	// statement may be planned without its parameters' values (PostgreSQL
	// switches to such a generic plan after five runs); that is harmless
	// for a listing that walks an index, but a filter's selectivity (a
	// LIKE prefix, a range) is exactly what the planner needs the values
	// for.
	query := db.reads.query
	if q.Filter != nil || q.Sort != "" || len(q.Labels) > 0 {
		query = db.reader.QueryContext
	}
	rows, err := query(ctx, Bind(db.dialect, stmt), args...)
	if err != nil {
		return storage.RecordQueryPage{}, fmt.Errorf("query records: %w", err)
	}
	defer rows.Close()
	page := storage.RecordQueryPage{Records: make([]storage.Record, 0, limit+1)}
	var sc servedScanner
	for rows.Next() {
		rec, err := sc.scan(rows)
		if err != nil {
			return storage.RecordQueryPage{}, err
		}
		page.Records = append(page.Records, rec)
	}
	if err := rows.Err(); err != nil {
		return storage.RecordQueryPage{}, fmt.Errorf("query records: %w", err)
	}
	if len(page.Records) > limit {
		page.Records = page.Records[:limit]
		if q.Sort == "" {
			last := page.Records[limit-1]
			page.Cursor = storage.EncodeCursor(rq.scope, storage.Position{Time: last.CreatedAt, URI: last.URI})
		} else {
			page.Cursor = storage.EncodeCursor(rq.scope, storage.Position{Time: time.UnixMicro(int64(offset + limit))})
		}
	}
	return page, nil
}

func badCursor() error {
	return fmt.Errorf("%w: %w", storage.ErrInvalidQuery, storage.ErrInvalidCursor)
}

// CountMatching implements storage.QueryStore.
func (db *DB) CountMatching(ctx context.Context, q storage.RecordQuery) (int64, error) {
	rq, err := db.prepareQuery(q)
	if err != nil {
		return 0, err
	}
	var n int64
	err = db.reader.QueryRowContext(ctx,
		Bind(db.dialect, `SELECT COUNT(*) FROM records WHERE `+strings.Join(rq.where, ` AND `)), rq.args...).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count matching records: %w", err)
	}
	return n, nil
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
