package luascript

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/lexview/lexview/script"
	"github.com/lexview/lexview/storage"
)

// pageHost answers db.query with a fixed page, so benchmarks measure the
// script machinery alone: VM checkout, globals, conversion of the records
// to Lua and of the result to JSON.
type pageHost struct {
	nopHost
	page storage.RecordQueryPage
}

func (h pageHost) QueryRecords(context.Context, storage.RecordQuery) (storage.RecordQueryPage, error) {
	return h.page, nil
}

func benchPage(n int) storage.RecordQueryPage {
	var p storage.RecordQueryPage
	for i := range n {
		v, _ := json.Marshal(map[string]any{
			"$type": "app.bsky.feed.post", "text": fmt.Sprintf("post number %d with some text in it", i),
			"createdAt": time.Unix(int64(1700000000+i), 0).UTC().Format(time.RFC3339), "langs": []string{"en"},
			"reply": map[string]any{"root": map[string]any{"uri": "at://did:plc:abc/app.bsky.feed.post/3k", "cid": "bafyrei"}},
		})
		p.Records = append(p.Records, storage.Record{URI: fmt.Sprintf("at://did:plc:abc/app.bsky.feed.post/%d", i), CID: "bafyreiabc", Value: v})
	}
	p.Cursor = "next"
	return p
}

// BenchmarkScriptedQuery is a query script that calls db.query once and
// returns its result: the overhead a script adds to the default query.
func BenchmarkScriptedQuery(b *testing.B) {
	e := New(Options{})
	p, err := e.Compile("bench", `function handle() return db.query{collection = "app.bsky.feed.post", limit = 20} end`)
	if err != nil {
		b.Fatal(err)
	}
	inv := &script.Invocation{Host: pageHost{page: benchPage(20)}, Kind: script.KindQuery, Method: "com.example.feed"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Run(context.Background(), inv); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecordHook is a record-event script that stamps a field on the
// record: the per-event cost of a hook in ingestion.
func BenchmarkRecordHook(b *testing.B) {
	e := New(Options{})
	p, err := e.Compile("bench", `function handle() record.indexedBy = "lexview" return record end`)
	if err != nil {
		b.Fatal(err)
	}
	rec := benchPage(1).Records[0]
	inv := &script.Invocation{Host: nopHost{}, Kind: script.KindIndex, Method: "app.bsky.feed.post",
		Event: &script.RecordEvent{Action: "create", URI: rec.URI, Collection: "app.bsky.feed.post", Record: rec.Value}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Run(context.Background(), inv); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTightLoop runs nearly the whole instruction budget (a loop
// iteration is four instructions).
func BenchmarkTightLoop(b *testing.B) {
	e := New(Options{})
	p, _ := e.Compile("bench", `function handle() local n = 0 while n < 240000 do n = n + 1 end return n end`)
	inv := &script.Invocation{Host: nopHost{}, Kind: script.KindQuery}
	for b.Loop() {
		if _, err := p.Run(context.Background(), inv); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTableStores builds a 100,000-element array with index
// assignments, and stores a field as many times for comparison; it
// reports the VM instructions each loop iteration takes (the budget's
// count: an iteration is the store and the FORLOOP).
func BenchmarkTableStores(b *testing.B) {
	const n = 100_000
	for _, tc := range []struct{ name, body string }{
		{"index", `t[i] = i`},
		{"append", `t[#t + 1] = i`},
		{"string key", `t[k] = i`},
		{"field", `t.x = i`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			e := New(Options{})
			var used int64
			e.afterRun = func(r *run) { used = e.limits.Instructions - r.budget.left }
			p, err := e.Compile("bench", `function handle() local t, k = {}, "k" for i = 1, `+fmt.Sprint(n)+` do `+tc.body+` end return #t end`)
			if err != nil {
				b.Fatal(err)
			}
			inv := &script.Invocation{Host: nopHost{}, Kind: script.KindQuery}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Run(context.Background(), inv); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(used)/n, "instr/iter")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/iter")
		})
	}
}
