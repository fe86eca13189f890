package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/lexicon"
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

// database is one benchmark database and how to remove it.
type database struct {
	url     string
	cleanup func()
}

// createDatabase returns a database for backend: the SQLite file at path
// or a new database on the PostgreSQL server at APPVIEW_TEST_POSTGRES_URL
// (reuse, when not empty, names an existing database to keep). fresh
// reports whether it has to be seeded.
func createDatabase(ctx context.Context, backend, dir, name, reuse string) (db database, fresh bool, err error) {
	if reuse != "" {
		if backend == "sqlite" {
			_, statErr := os.Stat(reuse)
			return database{url: "sqlite://" + reuse, cleanup: func() {}}, os.IsNotExist(statErr), nil
		}
		if hasRecords(ctx, reuse) {
			return database{url: reuse, cleanup: func() {}}, false, nil
		}
		return database{url: reuse, cleanup: func() {}}, true, ensureDatabase(ctx, reuse)
	}
	if backend == "sqlite" {
		path := filepath.Join(dir, name+".db")
		return database{url: "sqlite://" + path, cleanup: func() {}}, true, nil
	}
	base := os.Getenv("APPVIEW_TEST_POSTGRES_URL")
	if base == "" {
		return db, false, errors.New("APPVIEW_TEST_POSTGRES_URL is not set (scripts/bench-query provisions a server)")
	}
	admin, err := sql.Open("postgres", base)
	if err != nil {
		return db, false, err
	}
	dbName := fmt.Sprintf("lexview_benchquery_%s_%d", name, time.Now().UnixNano())
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+dbName); err != nil {
		admin.Close()
		return db, false, fmt.Errorf("create database: %w", err)
	}
	u, err := url.Parse(base)
	if err != nil {
		admin.Close()
		return db, false, err
	}
	u.Path = "/" + dbName
	return database{url: u.String(), cleanup: func() {
		defer admin.Close()
		_, _ = admin.Exec("DROP DATABASE IF EXISTS " + dbName + " WITH (FORCE)")
	}}, true, nil
}

// ensureDatabase creates the PostgreSQL database dbURL names unless it
// exists.
func ensureDatabase(ctx context.Context, dbURL string) error {
	u, err := url.Parse(dbURL)
	if err != nil {
		return err
	}
	name := strings.TrimPrefix(u.Path, "/")
	u.Path = "/postgres"
	admin, err := sql.Open("postgres", u.String())
	if err != nil {
		return err
	}
	defer admin.Close()
	var exists bool
	if err := admin.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return fmt.Errorf("look for database %s: %w", name, err)
	}
	if !exists {
		if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+pq.QuoteIdentifier(name)); err != nil {
			return fmt.Errorf("create database %s: %w", name, err)
		}
	}
	return nil
}

// hasRecords reports whether the PostgreSQL database at dbURL holds a
// records table with rows.
func hasRecords(ctx context.Context, dbURL string) bool {
	db, err := sql.Open("postgres", dbURL)
	if err != nil {
		return false
	}
	defer db.Close()
	var n int
	return db.QueryRowContext(ctx, `SELECT 1 FROM records LIMIT 1`).Scan(&n) == nil
}

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
	app, err := appview.New(appConfig(s))
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
	if err := registerClient(ctx, s); err != nil {
		return 0, err
	}
	if w, ok := s.(interface{ Writer() *sql.DB }); ok {
		// Leave a checkpointed (SQLite) or vacuumed and analysed
		// (PostgreSQL) database: both servers start from the same state.
		stmt := "VACUUM ANALYZE records"
		if strings.HasPrefix(dbURL, "sqlite://") {
			stmt = "PRAGMA wal_checkpoint(TRUNCATE)"
		}
		if _, err := w.Writer().ExecContext(ctx, stmt); err != nil {
			return 0, fmt.Errorf("%s: %w", stmt, err)
		}
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
func asReply(collection string, v []byte, i int) []byte {
	parent := storagetest.BenchRecord(collection, max(i-1, 0))
	root := storagetest.BenchRecord(collection, i-i%10)
	ref := func(r storage.Record) string { return `{"cid":"` + r.CID + `","uri":"` + r.URI + `"}` }
	return append([]byte(`{"reply":{"parent":`+ref(parent)+`,"root":`+ref(root)+`},`), v[1:]...)
}

// benchTokenKey seals secrets at rest in the benchmark's databases (which
// hold none but the API client's hashed secret).
const benchTokenKey = "bGV4dmlldy1iZW5jaHF1ZXJ5LXRva2VuLWtleS0zMiE="

// appConfig is the App configuration of the benchmark: no live source, a
// quiet logger.
func appConfig(s storage.Store) appview.Config {
	return appview.Config{
		Store:    s,
		Ingest:   appview.IngestConfig{JetstreamURL: "off"},
		Security: appview.SecurityConfig{SessionSecret: randomSecret(), TokenEncryptionKey: benchTokenKey},
		Logger:   quietLogger(),
	}
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
