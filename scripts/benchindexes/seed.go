package main

import (
	"context"
	"fmt"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/scripts/internal/benchkit"
	"github.com/lexview/lexview/storage"
)

// seedBatch is the number of records written per ApplyBatch while seeding.
const seedBatch = 10_000

// recordLexicons describe the dataset's records.
var recordLexicons = []string{
	`{"lexicon":1,"id":"` + collPost + `","defs":{
	  "main":{"type":"record","key":"tid","record":{"type":"object","required":["text","createdAt"],"properties":{
	    "text":{"type":"string","maxLength":3000},
	    "createdAt":{"type":"string","format":"datetime"},
	    "langs":{"type":"array","maxLength":3,"items":{"type":"string","format":"language"}},
	    "reply":{"type":"ref","ref":"#replyRef"}}}},
	  "replyRef":{"type":"object","required":["root","parent"],"properties":{
	    "root":{"type":"ref","ref":"#strongRef"},"parent":{"type":"ref","ref":"#strongRef"}}},
	  "strongRef":{"type":"object","required":["uri","cid"],"properties":{
	    "uri":{"type":"string","format":"at-uri"},"cid":{"type":"string","format":"cid"}}}}}`,
	`{"lexicon":1,"id":"` + collLike + `","defs":{
	  "main":{"type":"record","key":"tid","record":{"type":"object","required":["subject","createdAt"],"properties":{
	    "subject":{"type":"ref","ref":"#strongRef"},
	    "createdAt":{"type":"string","format":"datetime"}}}},
	  "strongRef":{"type":"object","required":["uri","cid"],"properties":{
	    "uri":{"type":"string","format":"at-uri"},"cid":{"type":"string","format":"cid"}}}}}`,
	`{"lexicon":1,"id":"` + collFollow + `","defs":{
	  "main":{"type":"record","key":"tid","record":{"type":"object","required":["subject","createdAt"],"properties":{
	    "subject":{"type":"string","format":"did"},
	    "createdAt":{"type":"string","format":"datetime"}}}}}}`,
}

// prepare migrates the database, seeds it when fresh (else regenerates
// the dataset without writing it, for its counts, and checks that the
// database holds it), registers the lexicons and the API client, and
// returns the dataset.
func prepare(ctx context.Context, dbURL string, fresh bool, sp spec) (*dataset, error) {
	s, err := appview.OpenStore(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		return nil, err
	}
	d := newDataset(sp)
	if fresh {
		if err := seed(ctx, s, d); err != nil {
			return nil, err
		}
	} else {
		if err := d.generate(func(storage.Record) error { return nil }); err != nil {
			return nil, err
		}
		if err := checkCounts(ctx, s, d); err != nil {
			return nil, err
		}
	}
	app, err := appview.New(benchkit.AppConfig(s))
	if err != nil {
		return nil, err
	}
	for _, doc := range recordLexicons {
		if _, err := app.Lexicons().Put(ctx, lexicon.Upload{Document: []byte(doc), Backfill: new(false)}); err != nil {
			return nil, fmt.Errorf("upload lexicon: %w", err)
		}
	}
	for _, u := range queryUploads {
		if _, err := app.Lexicons().Put(ctx, u); err != nil {
			return nil, fmt.Errorf("upload lexicon: %w", err)
		}
	}
	if err := declareFieldIndexes(ctx, s); err != nil {
		return nil, err
	}
	if err := createBaselineIndexes(ctx, s); err != nil {
		return nil, err
	}
	if err := benchkit.RegisterClient(ctx, s); err != nil {
		return nil, err
	}
	if err := benchkit.Settle(ctx, s, dbURL); err != nil {
		return nil, err
	}
	return d, nil
}

// seed writes the dataset in batches of seedBatch records.
func seed(ctx context.Context, s storage.Store, d *dataset) error {
	total := d.likes + d.posts + d.follows
	fmt.Printf("seeding %d records: %v\n", total, d.spec)
	start := time.Now()
	ops := make([]storage.RecordOp, 0, seedBatch)
	n := 0
	flush := func() error {
		if len(ops) == 0 {
			return nil
		}
		if err := s.ApplyBatch(ctx, storage.Batch{Ops: ops}); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
		ops = ops[:0]
		return nil
	}
	err := d.generate(func(r storage.Record) error {
		ops = append(ops, storage.RecordOp{Record: r})
		n++
		if n%200_000 == 0 {
			fmt.Printf("seeding: %d/%d records (%v)\n", n, total, time.Since(start).Round(time.Second))
		}
		if len(ops) == seedBatch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return err
	}
	took := time.Since(start)
	fmt.Printf("seeded %d records in %v (%.0f records/s)\n", n, took.Round(time.Millisecond), float64(n)/took.Seconds())
	return nil
}

// checkCounts refuses a reused database that does not hold the dataset
// of the spec asked for.
func checkCounts(ctx context.Context, s storage.Store, d *dataset) error {
	for _, c := range []int{cPost, cLike, cFollow} {
		n, err := s.CountRecords(ctx, collNames[c])
		if err != nil {
			return err
		}
		if n != int64(d.count(c)) {
			return fmt.Errorf("the database holds %d records of %s, the dataset %d: it was seeded with other flags", n, collNames[c], d.count(c))
		}
	}
	return nil
}
