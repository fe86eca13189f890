package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/sqlite"
	"github.com/lexview/lexview/storage/storagetest"
)

const seedBatch = 10_000

// recordLexicon describes the seeded records (storagetest.BenchRecord).
const recordLexicon = `{"lexicon":1,"id":"` + benchCollection + `","defs":{"main":{"type":"record","key":"tid",
"record":{"type":"object","required":["text","createdAt"],"properties":{
"text":{"type":"string","maxLength":3000},
"createdAt":{"type":"string","format":"datetime"},
"langs":{"type":"array","items":{"type":"string","format":"language"}}}}}}}`

// queryLexicon is the list query served with Lexview's default behaviour.
const queryLexicon = `{"lexicon":1,"id":"` + benchQuery + `","defs":{"main":{"type":"query",
"parameters":{"type":"params","properties":{
"limit":{"type":"integer","minimum":1,"maximum":100},
"cursor":{"type":"string"},
"did":{"type":"string","format":"did"}}},
"output":{"encoding":"application/json"}}}}`

// prepare seeds path with records records (unless it exists already) and
// registers the lexicons. It returns the collection's record count.
func prepare(ctx context.Context, path string, records int, shape string) (int64, error) {
	_, statErr := os.Stat(path)
	fresh := os.IsNotExist(statErr)
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		return 0, err
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		return 0, err
	}
	if fresh {
		fmt.Printf("seeding %d %s records\n", records, shape)
		if err := seed(ctx, s, records, shape); err != nil {
			return 0, err
		}
	} else {
		fmt.Println("reusing the existing database (-records and -shape ignored)")
	}
	app, err := appview.New(appview.Config{Store: s, JetstreamURL: "off", SessionSecret: randomSecret(), Logger: quietLogger()})
	if err != nil {
		return 0, err
	}
	if _, _, err := app.Lexicons().Put(ctx, lexicon.Upload{Document: []byte(recordLexicon), Backfill: new(false)}); err != nil {
		return 0, fmt.Errorf("record lexicon: %w", err)
	}
	if _, _, err := app.Lexicons().Put(ctx, lexicon.Upload{Document: []byte(queryLexicon), TargetCollection: benchCollection}); err != nil {
		return 0, fmt.Errorf("query lexicon: %w", err)
	}
	if err := registerClient(ctx, s); err != nil {
		return 0, err
	}
	// Leave a checkpointed database: both servers start from the same state.
	if _, err := s.Writer().ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return 0, fmt.Errorf("checkpoint: %w", err)
	}
	return s.CountRecords(ctx, benchCollection)
}

// seed writes records records in batches of seedBatch.
func seed(ctx context.Context, s storage.Store, records int, shape string) error {
	start := time.Now()
	ops := make([]storage.RecordOp, 0, seedBatch)
	for i := range records {
		r := storagetest.BenchRecord(benchCollection, i)
		if shape == "reply" {
			r.Value = asReply(r.Value, i)
		}
		ops = append(ops, storage.RecordOp{Record: r})
		if len(ops) == seedBatch || i == records-1 {
			if err := s.ApplyBatch(ctx, storage.Batch{Ops: ops}); err != nil {
				return fmt.Errorf("seed: %w", err)
			}
			ops = ops[:0]
		}
		if (i+1)%200_000 == 0 {
			fmt.Printf("seeding: %d/%d records (%v)\n", i+1, records, time.Since(start).Round(time.Second))
		}
	}
	d := time.Since(start)
	fmt.Printf("seeded %d records in %v (%.0f records/s)\n", records, d.Round(time.Millisecond), float64(records)/d.Seconds())
	return nil
}

// registerClient stores the API client whose key the load generator sends,
// with a rate limit high enough never to refuse a request.
func registerClient(ctx context.Context, s storage.Store) error {
	if _, err := s.GetAPIClientByKey(ctx, clientKey); err == nil {
		return nil
	}
	capacity, refill := 1<<30, 1e9
	now := time.Now()
	sum := sha256.Sum256([]byte("hvs_bench"))
	err := s.CreateAPIClient(ctx, storage.APIClient{
		ID: storage.NewID(), Key: clientKey, SecretHash: hex.EncodeToString(sum[:]), Name: "benchquery",
		ClientIDURL: "https://bench.invalid/client-metadata.json", ClientURI: "https://bench.invalid",
		Scopes: "atproto", Type: storage.ClientConfidential, IsActive: true, CreatedBy: "did:plc:benchquery",
		RateLimitCapacity: &capacity, RateLimitRefillRate: &refill, CreatedAt: now, UpdatedAt: now,
	})
	if err != nil {
		return fmt.Errorf("register API client %s: %w", clientKey, err)
	}
	return nil
}

// asReply turns a post into a reply to the previous record: it gains the
// nested {"uri","cid"} references that most Bluesky records (replies, likes,
// reposts) carry.
func asReply(v []byte, i int) []byte {
	parent := storagetest.BenchRecord(benchCollection, max(i-1, 0))
	root := storagetest.BenchRecord(benchCollection, i-i%10)
	ref := func(r storage.Record) string { return `{"cid":"` + r.CID + `","uri":"` + r.URI + `"}` }
	return append([]byte(`{"reply":{"parent":`+ref(parent)+`,"root":`+ref(root)+`},`), v[1:]...)
}

func randomSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// quietLogger drops everything below errors (start-up warnings, request logs).
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}
