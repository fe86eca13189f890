package appview_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// queryBenchRecords is the size of the collection BenchmarkDefaultQuery
// serves from.
const queryBenchRecords = 100_000

const (
	benchListQuery     = "app.bench.feed.listPosts"
	benchScriptedQuery = "app.bench.feed.listPostsScripted"
	benchClientKey     = "hvc_bench"
)

// BenchmarkDefaultQuery measures the App's XRPC handler serving the
// default query behaviour over a collection of 100,000 post-like records,
// on each backend: the first page of 20 (FirstPage), a page of 50 about
// 90,000 records deep after a cursor (DeepPage), one account's first page
// (DIDPage), one record by URI (ByURI), and the first page through a Lua
// script that returns db.query{limit = 20} (ScriptedFirstPage). Each
// request goes the whole way through the handler: routing, client
// identification and rate limit, user authentication, the read and the
// response body. scripts/bench-query measures the same over HTTP against a
// tuned baseline.
func BenchmarkDefaultQuery(b *testing.B) {
	for _, backend := range storagetest.Backends() {
		b.Run(backend.Name, func(b *testing.B) {
			app := queryBenchApp(b, backend.Open(b))
			first := "/xrpc/" + benchListQuery + "?limit=20"
			var page struct {
				Records []struct {
					URI string `json:"uri"`
				} `json:"records"`
				Cursor string `json:"cursor"`
			}
			cursor := ""
			for range 900 {
				u := "/xrpc/" + benchListQuery + "?limit=100"
				if cursor != "" {
					u += "&cursor=" + url.QueryEscape(cursor)
				}
				json.Unmarshal(serveBench(b, app, u), &page)
				cursor = page.Cursor
			}
			deep := "/xrpc/" + benchListQuery + "?limit=50&cursor=" + url.QueryEscape(cursor)
			byDID := "/xrpc/" + benchListQuery + "?limit=20&did=" + url.QueryEscape(storagetest.BenchDID(7))
			byURI := "/xrpc/" + benchListQuery + "?uri=" + url.QueryEscape(page.Records[0].URI)
			scripted := "/xrpc/" + benchScriptedQuery + "?limit=20"
			for _, c := range []struct{ name, target string }{
				{"FirstPage", first}, {"DeepPage", deep}, {"DIDPage", byDID}, {"ByURI", byURI}, {"ScriptedFirstPage", scripted},
			} {
				b.Run(c.name, func(b *testing.B) {
					req := benchRequest(b, c.target)
					w := &discardResponse{header: http.Header{}}
					b.ReportAllocs()
					for b.Loop() {
						w.reset()
						app.ServeHTTP(w, req)
						if w.status != http.StatusOK {
							b.Fatalf("%s: status %d", c.target, w.status)
						}
					}
					b.ReportMetric(float64(w.n), "bytes/answer")
				})
			}
		})
	}
}

// queryBenchApp returns an App over store holding queryBenchRecords
// records, the query lexicons and the API client benchClientKey.
func queryBenchApp(b *testing.B, store storage.Store) *appview.App {
	b.Helper()
	ctx := context.Background()
	const collection = storagetest.BenchCollection
	ops := make([]storage.RecordOp, 0, 10_000)
	for i := range queryBenchRecords {
		ops = append(ops, storage.RecordOp{Record: storagetest.BenchRecord(collection, i)})
		if len(ops) == cap(ops) {
			if err := store.ApplyBatch(ctx, storage.Batch{Ops: ops}); err != nil {
				b.Fatal(err)
			}
			ops = ops[:0]
		}
	}
	app, err := appview.New(appview.Config{
		Store:    store,
		Ingest:   appview.IngestConfig{JetstreamURL: "off"},
		Security: appview.SecurityConfig{SessionSecret: "bench-session-secret-0123456789abcdef", TokenEncryptionKey: "bGV4dmlldy1iZW5jaHF1ZXJ5LXRva2VuLWtleS0zMiE="},
	})
	if err != nil {
		b.Fatal(err)
	}
	query := func(nsid string) []byte {
		return []byte(`{"lexicon":1,"id":"` + nsid + `","defs":{"main":{"type":"query","parameters":{"type":"params","properties":{
			"limit":{"type":"integer","minimum":1,"maximum":100},"cursor":{"type":"string"},"did":{"type":"string","format":"did"},
			"uri":{"type":"string","format":"at-uri"}}},"output":{"encoding":"application/json"}}}}`)
	}
	for _, u := range []lexicon.Upload{
		{Document: []byte(`{"lexicon":1,"id":"` + collection + `","defs":{"main":{"type":"record","key":"tid","record":{"type":"object","properties":{}}}}}`), Backfill: new(false)},
		{Document: query(benchListQuery), TargetCollection: collection},
		{Document: query(benchScriptedQuery), TargetCollection: collection,
			Script: `function handle() return db.query{limit = tonumber(params.limit) or 20} end`},
	} {
		if _, err := app.Lexicons().Put(ctx, u); err != nil {
			b.Fatal(err)
		}
	}
	capacity, refill := 1<<30, 1e9
	sum := sha256.Sum256([]byte("hvs_bench"))
	now := time.Now()
	if err := store.CreateAPIClient(ctx, storage.APIClient{
		ID: storage.NewID(), Key: benchClientKey, SecretHash: hex.EncodeToString(sum[:]), Name: "bench",
		ClientIDURL: "https://bench.invalid/client-metadata.json", ClientURI: "https://bench.invalid",
		Scopes: "atproto", Type: storage.ClientConfidential, IsActive: true, CreatedBy: "did:plc:bench",
		RateLimitCapacity: &capacity, RateLimitRefillRate: &refill, CreatedAt: now, UpdatedAt: now,
	}); err != nil {
		b.Fatal(err)
	}
	return app
}

func benchRequest(b *testing.B, target string) *http.Request {
	// net/http serves every request with a cancellable context; so does
	// the benchmark, since the drivers take a slower path for one.
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://lexview.test"+target, nil)
	if err != nil {
		b.Fatal(err)
	}
	req.RequestURI = target
	req.Header.Set("X-Client-Key", benchClientKey)
	return req
}

// serveBench serves one request and returns the 200 answer's body.
func serveBench(b *testing.B, app *appview.App, target string) []byte {
	w := &discardResponse{header: http.Header{}, keep: true}
	app.ServeHTTP(w, benchRequest(b, target))
	if w.status != http.StatusOK {
		b.Fatalf("%s: status %d: %s", target, w.status, w.body)
	}
	return w.body
}

// discardResponse is a ResponseWriter that counts the body (and keeps it
// when asked), so the benchmark measures the handler alone.
type discardResponse struct {
	header http.Header
	status int
	n      int
	keep   bool
	body   []byte
}

func (d *discardResponse) Header() http.Header { return d.header }
func (d *discardResponse) WriteHeader(s int) {
	if d.status == 0 {
		d.status = s
	}
}
func (d *discardResponse) Write(p []byte) (int, error) {
	if d.status == 0 {
		d.status = http.StatusOK
	}
	d.n += len(p)
	if d.keep {
		d.body = append(d.body, p...)
	}
	return len(p), nil
}
func (d *discardResponse) reset() { clear(d.header); d.status, d.n = 0, 0 }
