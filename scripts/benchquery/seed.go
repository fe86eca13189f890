package main

import (
	"context"
	"fmt"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/scripts/internal/benchkit"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

const seedBatch = 10_000

// recordLexicon describes the seeded records (storagetest.BenchRecord) of
// collection.
func recordLexicon(collection string) string {
	return `{"lexicon":1,"id":"` + collection + `","defs":{"main":{"type":"record","key":"tid",
"record":{"type":"object","required":["text","createdAt"],"properties":{
"text":{"type":"string","maxLength":3000},
"createdAt":{"type":"string","format":"datetime"},
"langs":{"type":"array","items":{"type":"string","format":"language"}}}}}}}`
}

// queryLexicon is a list query served with Lexview's default behaviour.
func queryLexicon(nsid string) string {
	return `{"lexicon":1,"id":"` + nsid + `","defs":{"main":{"type":"query",
"parameters":{"type":"params","properties":{
"limit":{"type":"integer","minimum":1,"maximum":100},
"cursor":{"type":"string"},
"did":{"type":"string","format":"did"},
"uri":{"type":"string","format":"at-uri"}}},
"output":{"encoding":"application/json"}}}}`
}

// scriptSource serves a page through Lua: one db.query call, returned.
const scriptSource = `function handle() return db.query{limit = tonumber(params.limit) or 20} end`

// seedSpec says what a benchmark database holds.
type seedSpec struct {
	records int    // records of benchCollection
	small   int    // records of smallCollection
	shape   string // post or reply
}

// prepare migrates the database, seeds it when fresh, registers the
// lexicons (record, default query, scripted query) and the API client,
// and returns the number of records of benchCollection.
func prepare(ctx context.Context, dbURL string, fresh bool, spec seedSpec) (int64, error) {
	s, err := appview.OpenStore(ctx, dbURL)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		return 0, err
	}
	if fresh {
		if err := seed(ctx, s, benchCollection, spec.records, spec.shape); err != nil {
			return 0, err
		}
		if err := seed(ctx, s, smallCollection, spec.small, "post"); err != nil {
			return 0, err
		}
	}
	app, err := appview.New(benchkit.AppConfig(s))
	if err != nil {
		return 0, err
	}
	uploads := []lexicon.Upload{
		{Document: []byte(recordLexicon(benchCollection)), Backfill: new(false)},
		{Document: []byte(recordLexicon(smallCollection)), Backfill: new(false)},
		{Document: []byte(queryLexicon(benchQuery)), TargetCollection: benchCollection},
		{Document: []byte(queryLexicon(smallQuery)), TargetCollection: smallCollection},
		{Document: []byte(queryLexicon(scriptedQuery)), TargetCollection: benchCollection, Script: scriptSource},
	}
	for _, u := range uploads {
		if _, err := app.Lexicons().Put(ctx, u); err != nil {
			return 0, fmt.Errorf("upload lexicon: %w", err)
		}
	}
	if err := benchkit.RegisterClient(ctx, s); err != nil {
		return 0, err
	}
	if err := benchkit.Settle(ctx, s, dbURL); err != nil {
		return 0, err
	}
	return s.CountRecords(ctx, benchCollection)
}

// seed writes n records of collection in batches of seedBatch.
func seed(ctx context.Context, s storage.Store, collection string, n int, shape string) error {
	if n == 0 {
		return nil
	}
	fmt.Printf("seeding %d %s records of %s\n", n, shape, collection)
	start := time.Now()
	ops := make([]storage.RecordOp, 0, seedBatch)
	for i := range n {
		r := storagetest.BenchRecord(collection, i)
		if shape == "reply" {
			r.Value = asReply(collection, r.Value, i)
		}
		ops = append(ops, storage.RecordOp{Record: r})
		if len(ops) == seedBatch || i == n-1 {
			if err := s.ApplyBatch(ctx, storage.Batch{Ops: ops}); err != nil {
				return fmt.Errorf("seed: %w", err)
			}
			ops = ops[:0]
		}
		if (i+1)%200_000 == 0 {
			fmt.Printf("seeding: %d/%d records (%v)\n", i+1, n, time.Since(start).Round(time.Second))
		}
	}
	d := time.Since(start)
	fmt.Printf("seeded %d records in %v (%.0f records/s)\n", n, d.Round(time.Millisecond), float64(n)/d.Seconds())
	return nil
}

// asReply turns a post into a reply to the previous record: it gains the
// nested {"uri","cid"} references that most Bluesky records (replies, likes,
// reposts) carry.
func asReply(collection string, v []byte, i int) []byte {
	parent := storagetest.BenchRecord(collection, max(i-1, 0))
	root := storagetest.BenchRecord(collection, i-i%10)
	ref := func(r storage.Record) string { return `{"cid":"` + r.CID + `","uri":"` + r.URI + `"}` }
	return append([]byte(`{"reply":{"parent":`+ref(parent)+`,"root":`+ref(root)+`},`), v[1:]...)
}
