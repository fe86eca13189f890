package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/lexview/lexview/scripts/internal/benchkit"
)

// The baseline is the physical limit of serving Lexview's default queries
// on this machine: a hand-tuned net/http handler over the same database
// file (or PostgreSQL database) that gives the same answers, byte for byte
// but for the cursor. It is as fast as the authors know how to make it:
// what every baseline does (benchkit: SQLite with mmap'd reads, a fixed
// pool of read connections, statements prepared once per connection,
// pooled answer buffers, the client key check), and
//
//   - keyset pagination on the sort key Lexview uses, (created_at, uri)
//     newest first (URI order for one account), fetching limit+1 rows to
//     decide whether there is a next page;
//   - only the columns the answer needs, scanned into reused buffers;
//   - the stored record JSON spliced after {"uri":…,"cid":….
//
// What it leaves out is what no caller of this benchmark sends: malformed
// parameters are refused, but records needing more than the splice (blobs,
// a missing $type, a record field named uri or cid) are not handled.

// baselineStatements are the baseline's SQL for one dialect.
type baselineStatements struct {
	first, after, byDID, byURI string
}

var baselineSQL = map[string]baselineStatements{
	"sqlite": {
		first: `SELECT uri, cid, record, created_at FROM records WHERE collection = ? ORDER BY created_at DESC, uri DESC LIMIT ?`,
		after: `SELECT uri, cid, record, created_at FROM records WHERE collection = ? AND created_at <= ? AND (created_at < ? OR uri < ?)
			ORDER BY created_at DESC, uri DESC LIMIT ?`,
		byDID: `SELECT uri, cid, record, 0 FROM records WHERE uri >= ? AND uri < ? ORDER BY uri DESC LIMIT ?`,
		byURI: `SELECT cid, record FROM records WHERE uri = ?`,
	},
	"postgres": {
		first: `SELECT uri, cid, record, created_at FROM records WHERE collection = $1 ORDER BY created_at DESC, uri DESC LIMIT $2`,
		after: `SELECT uri, cid, record, created_at FROM records WHERE collection = $1 AND created_at <= $2 AND (created_at < $2 OR uri < $3)
			ORDER BY created_at DESC, uri DESC LIMIT $4`,
		byDID: `SELECT uri, cid, record, 0 FROM records WHERE uri >= $1 AND uri < $2 ORDER BY uri DESC LIMIT $3`,
		byURI: `SELECT cid, record FROM records WHERE uri = $1`,
	},
}

// baseline serves the four kinds of query for the target collections.
type baseline struct {
	dialect string
	db      *sql.DB
	first   *sql.Stmt
	after   *sql.Stmt
	byDID   *sql.Stmt
	byURI   *sql.Stmt
	bufs    benchkit.BufPool
}

// newBaselineHandler opens the database at dbURL (sqlite://PATH or a
// postgres:// URL) and serves benchQuery and smallQuery.
func newBaselineHandler(ctx context.Context, dbURL string) (http.Handler, func(), error) {
	b := &baseline{}
	var err error
	if b.db, b.dialect, err = benchkit.OpenBaselineDB(dbURL); err != nil {
		return nil, nil, err
	}
	q := baselineSQL[b.dialect]
	for _, s := range []struct {
		dst  **sql.Stmt
		text string
	}{{&b.first, q.first}, {&b.after, q.after}, {&b.byDID, q.byDID}, {&b.byURI, q.byURI}} {
		if *s.dst, err = b.db.PrepareContext(ctx, s.text); err != nil {
			b.db.Close()
			return nil, nil, fmt.Errorf("prepare: %w", err)
		}
	}
	mux := http.NewServeMux()
	for _, m := range []struct{ nsid, collection string }{{benchQuery, benchCollection}, {smallQuery, smallCollection}} {
		mux.Handle("GET /xrpc/"+m.nsid, b.handler(m.collection))
	}
	return mux, func() { b.db.Close() }, nil
}

var (
	errInvalidRequest = []byte(`{"error":"invalid request"}`)
	errNotFoundRecord = []byte(`{"error":"record not found"}`)
	errInternal       = benchkit.ErrInternal
)

// handler serves one collection's query method.
func (b *baseline) handler(collection string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !benchkit.CheckClient(w, r) {
			return
		}
		params, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			benchkit.WriteJSON(w, http.StatusBadRequest, errInvalidRequest)
			return
		}
		bp := b.bufs.Get()
		defer b.bufs.Put(bp)
		var status int
		if uri := params.Get("uri"); uri != "" {
			*bp, status = b.get(r.Context(), (*bp)[:0], collection, uri)
		} else {
			*bp, status = b.list(r.Context(), (*bp)[:0], collection, params)
		}
		benchkit.WriteJSON(w, status, *bp)
	})
}

// get appends {"record":…} for one AT URI.
func (b *baseline) get(ctx context.Context, buf []byte, collection, uri string) ([]byte, int) {
	rest, ok := strings.CutPrefix(uri, "at://")
	did, path, _ := strings.Cut(rest, "/")
	if !ok || !strings.HasPrefix(did, "did:") || !strings.HasPrefix(path, collection+"/") || len(path) == len(collection)+1 {
		return append(buf, errInvalidRequest...), http.StatusBadRequest
	}
	var cid, record sql.RawBytes
	rows, err := b.byURI.QueryContext(ctx, uri)
	if err != nil {
		return append(buf, errInternal...), http.StatusInternalServerError
	}
	defer rows.Close()
	if !rows.Next() {
		if rows.Err() != nil {
			return append(buf, errInternal...), http.StatusInternalServerError
		}
		return append(buf, errNotFoundRecord...), http.StatusNotFound
	}
	if err := rows.Scan(&cid, &record); err != nil || len(record) < 2 {
		return append(buf, errInternal...), http.StatusInternalServerError
	}
	buf = append(buf, `{"record":`...)
	buf = benchkit.SpliceRecord(buf, uri, cid, record)
	return append(buf, '}'), http.StatusOK
}

// list appends {"records":[…],"cursor":…} for one page.
func (b *baseline) list(ctx context.Context, buf []byte, collection string, params url.Values) ([]byte, int) {
	limit := pageLimit
	if v := params.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return append(buf, errInvalidRequest...), http.StatusBadRequest
		}
		limit = n
	}
	did, cursor := params.Get("did"), params.Get("cursor")
	var rows *sql.Rows
	var err error
	switch {
	case did != "":
		if !strings.HasPrefix(did, "did:") || strings.ContainsAny(did, "/?#") {
			return append(buf, errInvalidRequest...), http.StatusBadRequest
		}
		prefix := "at://" + did + "/" + collection + "/"
		hi := prefix[:len(prefix)-1] + "0"
		if cursor != "" {
			_, uri, ok := benchkit.DecodeCursor(cursor)
			if !ok || uri > hi || !strings.HasPrefix(uri, prefix) {
				return append(buf, errInvalidRequest...), http.StatusBadRequest
			}
			hi = uri
		}
		rows, err = b.byDID.QueryContext(ctx, prefix, hi, limit+1)
	case cursor != "":
		micros, uri, ok := benchkit.DecodeCursor(cursor)
		if !ok {
			return append(buf, errInvalidRequest...), http.StatusBadRequest
		}
		if b.dialect == "postgres" {
			t := time.UnixMicro(micros).UTC()
			rows, err = b.after.QueryContext(ctx, collection, t, uri, limit+1)
		} else {
			rows, err = b.after.QueryContext(ctx, collection, micros, micros, uri, limit+1)
		}
	default:
		rows, err = b.first.QueryContext(ctx, collection, limit+1)
	}
	if err != nil {
		return append(buf, errInternal...), http.StatusInternalServerError
	}
	defer rows.Close()

	buf = append(buf, `{"records":[`...)
	var uri, cid, record sql.RawBytes
	var created any
	var lastURI []byte
	var lastCreated int64
	n, more := 0, false
	for rows.Next() {
		if n == limit {
			more = true
			break
		}
		if err := rows.Scan(&uri, &cid, &record, &created); err != nil || len(record) < 2 {
			return append(buf[:0], errInternal...), http.StatusInternalServerError
		}
		if n > 0 {
			buf = append(buf, ',')
		}
		buf = benchkit.SpliceRecord(buf, uri, cid, record)
		n++
		if n == limit {
			lastURI = append(lastURI[:0], uri...)
			lastCreated = benchkit.Micros(created)
		}
	}
	if rows.Err() != nil {
		return append(buf[:0], errInternal...), http.StatusInternalServerError
	}
	buf = append(buf, ']')
	if more {
		buf = append(buf, `,"cursor":"`...)
		buf = benchkit.AppendCursor(buf, lastCreated, lastURI)
		buf = append(buf, '"')
	}
	return append(buf, '}'), http.StatusOK
}
