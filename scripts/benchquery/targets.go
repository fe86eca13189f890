package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"

	"github.com/lexview/lexview/scripts/internal/benchkit"
)

// The four kinds of request measured against both servers.
var kinds = []string{"first", "deep", "did", "uri"}

// sample is a random set of stored records of benchCollection, shared by
// both servers' request sets.
type sample struct {
	uris []string
	dids []string
}

// sampleRecords picks n random URIs of collection (and their accounts).
func sampleRecords(ctx context.Context, dbURL, collection string, n int) (sample, error) {
	db, dialect, err := benchkit.OpenSQL(dbURL)
	if err != nil {
		return sample{}, err
	}
	defer db.Close()
	query := `SELECT uri FROM records WHERE collection = ? ORDER BY random() LIMIT ?`
	if dialect == "postgres" {
		query = `SELECT uri FROM records WHERE collection = $1 ORDER BY random() LIMIT $2`
	}
	rows, err := db.QueryContext(ctx, query, collection, n)
	if err != nil {
		return sample{}, fmt.Errorf("sample records: %w", err)
	}
	defer rows.Close()
	var s sample
	seen := map[string]bool{}
	for rows.Next() {
		var uri string
		if err := rows.Scan(&uri); err != nil {
			return sample{}, err
		}
		s.uris = append(s.uris, uri)
		did, _, _ := strings.Cut(strings.TrimPrefix(uri, "at://"), "/")
		if !seen[did] {
			seen[did] = true
			s.dids = append(s.dids, did)
		}
	}
	return s, rows.Err()
}

// requestSet builds the URLs of one kind of request against the server at
// base serving nsid: "first" (the first page), "deep" (a page of 50 after
// one of the server's own cursors, spread over the whole collection),
// "did" (one account's first page) and "uri" (one record).
func requestSet(ctx context.Context, kind, base, nsid string, s sample, records int64) ([]string, error) {
	prefix := base + "/xrpc/" + nsid + "?"
	var out []string
	switch kind {
	case "first":
		out = []string{prefix + "limit=20"}
	case "did":
		for _, d := range s.dids {
			out = append(out, prefix+"limit=20&did="+url.QueryEscape(d))
		}
	case "uri":
		for _, u := range s.uris {
			out = append(out, prefix+"uri="+url.QueryEscape(u))
		}
	case "deep":
		cursors, err := walkCursors(ctx, prefix, records, 1000)
		if err != nil {
			return nil, err
		}
		for _, c := range cursors {
			out = append(out, prefix+"limit=50&cursor="+url.QueryEscape(c))
		}
		rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	default:
		return nil, fmt.Errorf("unknown kind %q", kind)
	}
	return out, nil
}

// walkCursors pages through the whole listing 100 records at a time, as a
// client would, and keeps about want of the cursors it is handed, evenly
// spread.
func walkCursors(ctx context.Context, prefix string, records int64, want int) ([]string, error) {
	stride := max(1, int(records/100)/want)
	var out []string
	cursor := ""
	for page := 0; ; page++ {
		u := prefix + "limit=100"
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		var body struct {
			Cursor string `json:"cursor"`
		}
		if err := benchkit.GetJSON(ctx, u, &body); err != nil {
			return nil, fmt.Errorf("walk page %d: %w", page, err)
		}
		if body.Cursor == "" {
			break
		}
		cursor = body.Cursor
		if page%stride == 0 {
			out = append(out, cursor)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the listing has a single page")
	}
	return out, nil
}
