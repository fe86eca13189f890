package main

import (
	"context"
	"database/sql"
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/lexview/lexview/scripts/internal/benchkit"
)

// pageLimit reads limit: def when absent, else 1 to 100.
func pageLimit(params url.Values, def int) (int, bool) {
	v := params.Get("limit")
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	return n, err == nil && n >= 1 && n <= 100
}

// postsByLang appends a page of the posts in params' lang, newest first.
func (b *baseline) postsByLang(ctx context.Context, buf []byte, params url.Values) ([]byte, int) {
	lang := params.Get("lang")
	limit, ok := pageLimit(params, 20)
	if lang == "" || !ok {
		return append(buf, errInvalidRequest...), http.StatusBadRequest
	}
	var rows *sql.Rows
	var err error
	if c := params.Get("cursor"); c != "" {
		key, uri, ok := decodeKeyCursor(c)
		micros, perr := strconv.ParseInt(key, 10, 64)
		if !ok || perr != nil {
			return append(buf, errInvalidRequest...), http.StatusBadRequest
		}
		if b.dialect == "postgres" {
			rows, err = b.langNext.QueryContext(ctx, lang, time.UnixMicro(micros).UTC(), uri, limit+1)
		} else {
			rows, err = b.langNext.QueryContext(ctx, lang, micros, micros, uri, limit+1)
		}
	} else {
		rows, err = b.langFirst.QueryContext(ctx, lang, limit+1)
	}
	return b.recordPage(buf, rows, err, limit, func(dst []byte, key any) []byte {
		return strconv.AppendInt(dst, benchkit.Micros(key), 10)
	})
}

// postsByTime appends a page of the posts sorted by createdAt, newest
// first.
func (b *baseline) postsByTime(ctx context.Context, buf []byte, params url.Values) ([]byte, int) {
	limit, ok := pageLimit(params, 50)
	if !ok {
		return append(buf, errInvalidRequest...), http.StatusBadRequest
	}
	var rows *sql.Rows
	var err error
	if c := params.Get("cursor"); c != "" {
		key, uri, ok := decodeKeyCursor(c)
		if !ok {
			return append(buf, errInvalidRequest...), http.StatusBadRequest
		}
		if b.dialect == "postgres" {
			rows, err = b.timeNext.QueryContext(ctx, key, uri, limit+1)
		} else {
			rows, err = b.timeNext.QueryContext(ctx, key, key, uri, limit+1)
		}
	} else {
		rows, err = b.timeFirst.QueryContext(ctx, limit+1)
	}
	return b.recordPage(buf, rows, err, limit, func(dst []byte, key any) []byte {
		switch k := key.(type) {
		case []byte:
			return append(dst, k...)
		case string:
			return append(dst, k...)
		}
		return dst
	})
}

// recordPage appends {"cursor":…,"records":[…]} from rows of (uri, cid,
// record, sort key): the order db.query's answer has once encoded from
// Lua (keys sorted). appendKey renders the last record's sort key into
// the cursor.
func (b *baseline) recordPage(buf []byte, rows *sql.Rows, err error, limit int, appendKey func([]byte, any) []byte) ([]byte, int) {
	if err != nil {
		return append(buf, benchkit.ErrInternal...), http.StatusInternalServerError
	}
	defer rows.Close()
	start := len(buf)
	// The cursor comes first but is known last: the records go to a
	// second buffer.
	var uri, cid, record sql.RawBytes
	var key any
	var cursor [512]byte
	cur := cursor[:0]
	pp := b.bufs.Get()
	defer b.bufs.Put(pp)
	page := append(*pp, `"records":[`...)
	n, more := 0, false
	for rows.Next() {
		if n == limit {
			more = true
			break
		}
		if err := rows.Scan(&uri, &cid, &record, &key); err != nil || len(record) < 2 {
			return append(buf[:start], benchkit.ErrInternal...), http.StatusInternalServerError
		}
		if n > 0 {
			page = append(page, ',')
		}
		page = spliceCIDFirst(page, uri, cid, record)
		n++
		if n == limit {
			var raw [512]byte
			r := appendKey(raw[:0], key)
			r = append(r, ' ')
			r = append(r, uri...)
			cur = base64.RawURLEncoding.AppendEncode(cur, r)
		}
	}
	*pp = page
	if rows.Err() != nil {
		return append(buf[:start], benchkit.ErrInternal...), http.StatusInternalServerError
	}
	buf = append(buf, '{')
	if more {
		buf = append(buf, `"cursor":"`...)
		buf = append(buf, cur...)
		buf = append(buf, `",`...)
	}
	buf = append(buf, page...)
	return append(buf, `]}`...), http.StatusOK
}

// decodeKeyCursor reads the field kinds' cursor: base64url("KEY URI").
func decodeKeyCursor(c string) (key, uri string, ok bool) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return "", "", false
	}
	key, uri, ok = strings.Cut(string(raw), " ")
	return key, uri, ok && strings.HasPrefix(uri, "at://")
}

// spliceCIDFirst appends {"cid":CID,"uri":URI,<the record's fields>}, the
// order a record of db.query's page has once encoded from Lua.
func spliceCIDFirst(buf, uri, cid, record []byte) []byte {
	buf = append(buf, `{"cid":"`...)
	buf = append(buf, cid...)
	buf = append(buf, `","uri":"`...)
	buf = append(buf, uri...)
	buf = append(buf, `",`...)
	return append(buf, record[1:]...)
}
