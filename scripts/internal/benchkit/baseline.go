package benchkit

import (
	"database/sql"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/lexview/lexview/storage/sqlite"
)

// The baselines are the physical limit of serving a benchmark's queries on
// this machine: hand-tuned net/http handlers over the same database file
// (or PostgreSQL database) that give Lexview's answers. What they share
// is here:
//
//   - SQLite in WAL mode with synchronous=NORMAL, query_only and mmap_size
//     set on every read connection, with Lexview's search functions
//     registered; PostgreSQL through lib/pq;
//   - a fixed pool of read connections (2 × GOMAXPROCS, at least 4), for
//     statements prepared once per connection (database/sql's *Stmt);
//   - pooled answer buffers, the stored record JSON spliced into them
//     without ever being decoded;
//   - the X-Client-Key check against the one known key.

// baselineDriver is mattn/go-sqlite3 with memory-mapped reads and the
// SQL functions of Lexview's full-text search (its BM25 ranking), which a
// baseline's search statement calls as Lexview's does.
const baselineDriver = "sqlite3_baseline"

func init() {
	sql.Register(baselineDriver, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		if _, err := c.Exec("PRAGMA mmap_size=1073741824", nil); err != nil {
			return err
		}
		return sqlite.RegisterSearchFunctions(c)
	}})
}

// OpenBaselineDB opens the database at dbURL (sqlite://PATH or a
// postgres:// URL) as the baselines read it, and returns its dialect
// ("sqlite" or "postgres").
func OpenBaselineDB(dbURL string) (db *sql.DB, dialect string, err error) {
	conns := max(4, 2*runtime.GOMAXPROCS(0))
	if path, ok := strings.CutPrefix(dbURL, "sqlite://"); ok {
		dialect = "sqlite"
		db, err = sql.Open(baselineDriver, "file:"+(&url.URL{Path: path}).EscapedPath()+
			"?_journal_mode=WAL&_synchronous=NORMAL&_query_only=true&_cache_size=-16000&_busy_timeout=10000")
	} else {
		dialect = "postgres"
		db, err = sql.Open("postgres", dbURL)
	}
	if err != nil {
		return nil, "", err
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	db.SetConnMaxIdleTime(0)
	db.SetConnMaxLifetime(0)
	return db, dialect, nil
}

// The error answers the baselines share with Lexview.
var (
	headerJSON = []string{"application/json; charset=utf-8"}
	// ErrMissingClient and ErrInvalidClient are the answers to a request
	// without or with a wrong client key.
	ErrMissingClient = []byte(`{"error":"Missing client identification"}`)
	ErrInvalidClient = []byte(`{"error":"Invalid client key"}`)
	// ErrInternal is the answer to a failed database read.
	ErrInternal = []byte(`{"error":"internal server error"}`)
)

// WriteJSON writes a JSON body with status.
func WriteJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = headerJSON
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// CheckClient checks the request's X-Client-Key and answers 401 when it
// is missing or not ClientKey.
func CheckClient(w http.ResponseWriter, r *http.Request) bool {
	switch key := r.Header.Get("X-Client-Key"); key {
	case ClientKey:
		return true
	case "":
		WriteJSON(w, http.StatusUnauthorized, ErrMissingClient)
	default:
		WriteJSON(w, http.StatusUnauthorized, ErrInvalidClient)
	}
	return false
}

// BufPool is a pool of answer buffers.
type BufPool struct{ p sync.Pool }

// Get returns an empty buffer; Put gives it back.
func (b *BufPool) Get() *[]byte {
	if v := b.p.Get(); v != nil {
		p := v.(*[]byte)
		*p = (*p)[:0]
		return p
	}
	p := make([]byte, 0, 32<<10)
	return &p
}

// Put returns a buffer Get handed out.
func (b *BufPool) Put(p *[]byte) { b.p.Put(p) }

// SpliceRecord appends {"uri":URI,"cid":CID,<the record's fields>}.
func SpliceRecord[S ~string | ~[]byte](buf []byte, uri S, cid, record []byte) []byte {
	buf = append(buf, `{"uri":"`...)
	buf = append(buf, uri...)
	buf = append(buf, `","cid":"`...)
	buf = append(buf, cid...)
	buf = append(buf, `",`...)
	return append(buf, record[1:]...)
}

// Micros returns a created_at column (SQLite's integer microseconds or
// PostgreSQL's timestamptz) as Unix microseconds.
func Micros(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case time.Time:
		return x.UnixMicro()
	}
	return 0
}
