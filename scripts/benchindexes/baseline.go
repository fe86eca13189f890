package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/lexview/lexview/scripts/internal/benchkit"
	"github.com/lexview/lexview/storage"
)

// The baseline is the physical limit of serving this benchmark's kinds of
// request on this machine: a hand-tuned net/http handler over the same
// database that gives Lexview's answers, byte for byte but for the
// cursor. Besides what every baseline does (benchkit: SQLite with mmap'd
// reads, a fixed pool of read connections, statements prepared once per
// connection, pooled answer buffers, the client key check):
//
//   - backlink pages and counts read the link index Lexview writes:
//     link_targets, one row per target and source with its id and the
//     number of links to it, and record_links, whose primary key (tid,
//     created_at, uri) is the index a page needs: the count from the
//     target's row, then limit+1 links newest first of its id (a scalar
//     subquery), only the columns the answer needs; collection and record key cut out of the
//     URI;
//   - the field-index kinds read the records table through expression
//     indexes of its own (createBaselineIndexes), partial over the posts:
//     (langs[0], created_at, uri) for the equality filter in creation
//     order, (createdAt, uri) for the field sort, with keyset cursors; the
//     stored record JSON spliced after {"cid":…,"uri":…, never decoded
//     (INDEXED BY on SQLite, whose planner without statistics prefers the
//     collection's creation-time index).
//     That is the smallest work those answers take: Lexview's declared
//     indexes are entries in a table beside the records, each read then
//     fetching its record.
//   - searches read the search index Lexview keeps for the posts' text
//     index, ranked as Lexview ranks (baseline_search.go).
//
// What it leaves out is what no caller of this benchmark sends: malformed
// parameters are refused with one generic answer, and the did filter of
// getBacklinks is not implemented.

// baselineStatements are the baseline's SQL for one dialect.
type baselineStatements struct {
	linkCount, linkFirst, linkAfter string
	langFirst, langAfter            string
	timeFirst, timeAfter            string
}

// The expressions of the baseline's own indexes, per dialect: a post's
// langs[0] and createdAt.
var (
	langExpr = map[string]string{"sqlite": `json_extract(record, '$.langs[0]')`, "postgres": `(record->'langs'->>0)`}
	timeExpr = map[string]string{"sqlite": `json_extract(record, '$.createdAt')`, "postgres": `(record->>'createdAt')`}
)

// baselineIndexes are the indexes the baseline's field-kind statements
// read, for one dialect.
func baselineIndexes(dialect string) []string {
	return []string{
		`CREATE INDEX IF NOT EXISTS baseline_post_lang ON records (` + langExpr[dialect] + `, created_at, uri) WHERE collection = '` + collPost + `'`,
		`CREATE INDEX IF NOT EXISTS baseline_post_time ON records (` + timeExpr[dialect] + `, uri) WHERE collection = '` + collPost + `'`,
	}
}

// createBaselineIndexes creates the baseline's indexes, unless a reused
// database has them (and, on PostgreSQL, analyses the tables again so that
// the planner knows them).
func createBaselineIndexes(ctx context.Context, s storage.Store) error {
	w, ok := s.(interface{ Writer() *sql.DB })
	if !ok {
		return fmt.Errorf("the store gives no database handle for the baseline's indexes")
	}
	stmts := baselineIndexes(s.Dialect())
	if s.Dialect() == "postgres" {
		stmts = append(stmts, `ANALYZE records`, `ANALYZE link_targets`, `ANALYZE record_links`)
	}
	for _, stmt := range stmts {
		if _, err := w.Writer().ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("baseline index: %w", err)
		}
	}
	return nil
}

// The id of a target and source in link_targets, as a scalar subquery:
// the page then walks record_links' primary key for that id (a join lets
// PostgreSQL's planner, which expects ~100 links per id, fetch every
// link of a popular target and sort them).
const (
	linkTargetID   = `SELECT id FROM link_targets WHERE target = ? AND source = ?`
	pgLinkTargetID = `SELECT id FROM link_targets WHERE target = $1 AND source = $2`
)

var baselineSQL = map[string]baselineStatements{
	"sqlite": {
		linkCount: `SELECT records FROM link_targets WHERE target = ? AND source = ?`,
		linkFirst: `SELECT uri, did, created_at FROM record_links WHERE tid = (` + linkTargetID + `)
			ORDER BY created_at DESC, uri DESC LIMIT ?`,
		linkAfter: `SELECT uri, did, created_at FROM record_links WHERE tid = (` + linkTargetID + `)
			AND created_at <= ? AND (created_at < ? OR uri < ?) ORDER BY created_at DESC, uri DESC LIMIT ?`,
		langFirst: `SELECT uri, cid, record, created_at FROM records INDEXED BY baseline_post_lang WHERE collection = '` + collPost + `' AND ` + langExpr["sqlite"] + ` = ?
			ORDER BY created_at DESC, uri DESC LIMIT ?`,
		langAfter: `SELECT uri, cid, record, created_at FROM records INDEXED BY baseline_post_lang WHERE collection = '` + collPost + `' AND ` + langExpr["sqlite"] + ` = ?
			AND created_at <= ? AND (created_at < ? OR uri < ?) ORDER BY created_at DESC, uri DESC LIMIT ?`,
		timeFirst: `SELECT uri, cid, record, ` + timeExpr["sqlite"] + ` FROM records INDEXED BY baseline_post_time WHERE collection = '` + collPost + `'
			ORDER BY ` + timeExpr["sqlite"] + ` DESC, uri DESC LIMIT ?`,
		timeAfter: `SELECT uri, cid, record, ` + timeExpr["sqlite"] + ` FROM records INDEXED BY baseline_post_time WHERE collection = '` + collPost + `'
			AND ` + timeExpr["sqlite"] + ` <= ? AND (` + timeExpr["sqlite"] + ` < ? OR uri < ?) ORDER BY ` + timeExpr["sqlite"] + ` DESC, uri DESC LIMIT ?`,
	},
	"postgres": {
		linkCount: `SELECT records FROM link_targets WHERE target = $1 AND source = $2`,
		linkFirst: `SELECT uri, did, created_at FROM record_links WHERE tid = (` + pgLinkTargetID + `)
			ORDER BY created_at DESC, uri DESC LIMIT $3`,
		linkAfter: `SELECT uri, did, created_at FROM record_links WHERE tid = (` + pgLinkTargetID + `)
			AND (created_at, uri) < ($3, $4) ORDER BY created_at DESC, uri DESC LIMIT $5`,
		langFirst: `SELECT uri, cid, record, created_at FROM records WHERE collection = '` + collPost + `' AND ` + langExpr["postgres"] + ` = $1
			ORDER BY created_at DESC, uri DESC LIMIT $2`,
		langAfter: `SELECT uri, cid, record, created_at FROM records WHERE collection = '` + collPost + `' AND ` + langExpr["postgres"] + ` = $1
			AND (created_at, uri) < ($2, $3) ORDER BY created_at DESC, uri DESC LIMIT $4`,
		timeFirst: `SELECT uri, cid, record, ` + timeExpr["postgres"] + ` FROM records WHERE collection = '` + collPost + `'
			ORDER BY ` + timeExpr["postgres"] + ` DESC, uri DESC LIMIT $1`,
		timeAfter: `SELECT uri, cid, record, ` + timeExpr["postgres"] + ` FROM records WHERE collection = '` + collPost + `'
			AND (` + timeExpr["postgres"] + `, uri) < ($1, $2) ORDER BY ` + timeExpr["postgres"] + ` DESC, uri DESC LIMIT $3`,
	},
}

// baseline serves the kinds' methods.
type baseline struct {
	dialect                        string
	db                             *sql.DB
	linkCount, linkFirst, linkNext *sql.Stmt
	langFirst, langNext            *sql.Stmt
	timeFirst, timeNext            *sql.Stmt
	search                         baselineSearch
	bufs                           benchkit.BufPool
}

var errInvalidRequest = []byte(`{"error":"invalid request"}`)

// newBaselineHandler opens the database at dbURL and serves the kinds'
// methods.
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
	}{{&b.linkCount, q.linkCount}, {&b.linkFirst, q.linkFirst}, {&b.linkNext, q.linkAfter},
		{&b.langFirst, q.langFirst}, {&b.langNext, q.langAfter}, {&b.timeFirst, q.timeFirst}, {&b.timeNext, q.timeAfter}} {
		if *s.dst, err = b.db.PrepareContext(ctx, s.text); err != nil {
			b.db.Close()
			return nil, nil, fmt.Errorf("prepare: %w", err)
		}
	}
	if err := b.prepareSearch(ctx); err != nil {
		b.db.Close()
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /xrpc/"+methodGetBacklinks, b.handler(b.backlinks))
	mux.Handle("GET /xrpc/"+methodGetBacklinksCount, b.handler(b.backlinkCount))
	mux.Handle("GET /xrpc/"+methodPostsByLang, b.handler(b.postsByLang))
	mux.Handle("GET /xrpc/"+methodPostsByTime, b.handler(b.postsByTime))
	mux.Handle("GET /xrpc/"+methodSearchPosts, b.handler(b.searchPosts))
	return mux, func() { b.db.Close() }, nil
}

// handler checks the client and the query string, and writes what serve
// appends to a pooled buffer.
func (b *baseline) handler(serve func(ctx context.Context, buf []byte, params url.Values) ([]byte, int)) http.Handler {
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
		*bp, status = serve(r.Context(), *bp, params)
		benchkit.WriteJSON(w, status, *bp)
	})
}

// linkParams reads subject and source (collection:path, a leading dot of
// the path dropped).
func linkParams(params url.Values) (subject, source string, ok bool) {
	subject = params.Get("subject")
	collection, path, found := strings.Cut(params.Get("source"), ":")
	path = strings.TrimPrefix(path, ".")
	if subject == "" || !found || collection == "" || path == "" || params.Has("did") {
		return "", "", false
	}
	return subject, collection + ":" + path, true
}

// count reads the number of links to subject from source.
func (b *baseline) count(ctx context.Context, subject, source string) (int64, error) {
	var n int64
	err := b.linkCount.QueryRowContext(ctx, subject, source).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return n, err
}

// backlinkCount appends {"total":N}.
func (b *baseline) backlinkCount(ctx context.Context, buf []byte, params url.Values) ([]byte, int) {
	subject, source, ok := linkParams(params)
	if !ok {
		return append(buf, errInvalidRequest...), http.StatusBadRequest
	}
	n, err := b.count(ctx, subject, source)
	if err != nil {
		return append(buf, benchkit.ErrInternal...), http.StatusInternalServerError
	}
	buf = append(buf, `{"total":`...)
	buf = strconv.AppendInt(buf, n, 10)
	return append(buf, '}'), http.StatusOK
}

// backlinks appends {"total":N,"records":[{"did","collection","rkey"}…],"cursor":…}.
func (b *baseline) backlinks(ctx context.Context, buf []byte, params url.Values) ([]byte, int) {
	subject, source, ok := linkParams(params)
	if !ok {
		return append(buf, errInvalidRequest...), http.StatusBadRequest
	}
	limit := 16
	if v := params.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return append(buf, errInvalidRequest...), http.StatusBadRequest
		}
		limit = n
	}
	total, err := b.count(ctx, subject, source)
	if err != nil {
		return append(buf, benchkit.ErrInternal...), http.StatusInternalServerError
	}
	var rows *sql.Rows
	if c := params.Get("cursor"); c != "" {
		micros, uri, ok := benchkit.DecodeCursor(c)
		if !ok {
			return append(buf, errInvalidRequest...), http.StatusBadRequest
		}
		if b.dialect == "postgres" {
			rows, err = b.linkNext.QueryContext(ctx, subject, source, time.UnixMicro(micros).UTC(), uri, limit+1)
		} else {
			rows, err = b.linkNext.QueryContext(ctx, subject, source, micros, micros, uri, limit+1)
		}
	} else {
		rows, err = b.linkFirst.QueryContext(ctx, subject, source, limit+1)
	}
	if err != nil {
		return append(buf, benchkit.ErrInternal...), http.StatusInternalServerError
	}
	defer rows.Close()
	buf = append(buf, `{"total":`...)
	buf = strconv.AppendInt(buf, total, 10)
	buf = append(buf, `,"records":[`...)
	var uri, did sql.RawBytes
	var created any
	var lastURI []byte
	var lastCreated int64
	n, more := 0, false
	for rows.Next() {
		if n == limit {
			more = true
			break
		}
		if err := rows.Scan(&uri, &did, &created); err != nil {
			return append(buf[:0], benchkit.ErrInternal...), http.StatusInternalServerError
		}
		// at://DID/COLLECTION/RKEY
		rest := uri[len("at://"):]
		rest = rest[len(did)+1:]
		slash := bytes.IndexByte(rest, '/')
		if n > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"did":"`...)
		buf = append(buf, did...)
		buf = append(buf, `","collection":"`...)
		buf = append(buf, rest[:slash]...)
		buf = append(buf, `","rkey":"`...)
		buf = append(buf, rest[slash+1:]...)
		buf = append(buf, `"}`...)
		n++
		if n == limit {
			lastURI = append(lastURI[:0], uri...)
			lastCreated = benchkit.Micros(created)
		}
	}
	if rows.Err() != nil {
		return append(buf[:0], benchkit.ErrInternal...), http.StatusInternalServerError
	}
	buf = append(buf, `],"cursor":`...)
	if more {
		buf = append(buf, '"')
		buf = benchkit.AppendCursor(buf, lastCreated, lastURI)
		buf = append(buf, '"', '}')
	} else {
		buf = append(buf, `null}`...)
	}
	return buf, http.StatusOK
}
