package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "github.com/lib/pq" // the "postgres" driver, for CREATE/DROP DATABASE

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/internal/jetstreamtest"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/scripts/internal/benchkit"
	"github.com/lexview/lexview/storage"
)

// database is a fresh database for one backend.
type database struct {
	url     string
	cleanup func() error
	// serverPID is the local PostgreSQL postmaster (0: none or unknown),
	// whose process tree's CPU is reported.
	serverPID int
}

// createDatabase makes an empty database: a new SQLite file under dir, or
// a new database on the PostgreSQL server at APPVIEW_TEST_POSTGRES_URL.
func createDatabase(ctx context.Context, backend, dir string) (*database, error) {
	switch backend {
	case "sqlite":
		path := filepath.Join(dir, "sqlite", "bench.db")
		return &database{url: "sqlite://" + path, cleanup: func() error { return os.RemoveAll(filepath.Dir(path)) }}, nil
	case "postgres":
		base := os.Getenv("APPVIEW_TEST_POSTGRES_URL")
		if base == "" {
			return nil, errors.New("APPVIEW_TEST_POSTGRES_URL is not set (scripts/bench-ingest provisions a server)")
		}
		admin, err := sql.Open("postgres", base)
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("lexview_benchingest_%d", time.Now().UnixNano())
		if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
			admin.Close()
			return nil, fmt.Errorf("create database: %w", err)
		}
		u, err := url.Parse(base)
		if err != nil {
			admin.Close()
			return nil, err
		}
		u.Path = "/" + name
		return &database{url: u.String(), serverPID: postmasterPID(ctx, admin), cleanup: func() error {
			defer admin.Close()
			_, err := admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
			return err
		}}, nil
	}
	return nil, fmt.Errorf("unknown backend %q (want sqlite or postgres)", backend)
}

// benchHook is the record-event script of -hook: it changes every record,
// so each event crosses into Lua and back.
const benchHook = `function handle() if action == "delete" then return true end record.indexedBy = "lexview" return record end`

// registerLexicons migrates the database and uploads the record lexicons,
// as an operator would before starting the service; with hook, each gets
// benchHook as its index_hook.
func registerLexicons(ctx context.Context, dbURL string, hook bool) error {
	store, err := appview.OpenStore(ctx, dbURL)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	reg := lexicon.NewRegistry(store)
	noBackfill := false
	for _, doc := range lexiconDocs {
		up := lexicon.Upload{Document: json.RawMessage(doc), Backfill: &noBackfill}
		if hook {
			up.IndexHook = benchHook
		}
		if _, _, err := reg.Put(ctx, up); err != nil {
			return fmt.Errorf("register lexicon: %w", err)
		}
	}
	return nil
}

// checkRecords validates sample events against the lexicons (a generator
// bug would otherwise show up as rejections) and nothing else.
func checkRecords(ctx context.Context, dbURL string, sample [][]byte) error {
	store, err := appview.OpenStore(ctx, dbURL)
	if err != nil {
		return err
	}
	defer store.Close()
	reg := lexicon.NewRegistry(store)
	if err := reg.Load(ctx); err != nil {
		return err
	}
	snap := reg.Snapshot()
	for _, raw := range sample {
		var ev struct {
			Commit struct {
				Operation, Collection string
				Record                json.RawMessage
			}
		}
		if err := json.Unmarshal(raw, &ev); err != nil {
			return fmt.Errorf("generated event is not JSON: %w\n%s", err, raw)
		}
		if ev.Commit.Operation == "delete" {
			continue
		}
		if err := snap.ValidateRecord(ev.Commit.Collection, ev.Commit.Record); err != nil {
			return fmt.Errorf("generated record fails validation: %w\n%s", err, raw)
		}
	}
	return nil
}

// countRecords counts the indexed records of every benchmark collection.
func countRecords(ctx context.Context, dbURL string) (int64, error) {
	store, err := appview.OpenStore(ctx, dbURL)
	if err != nil {
		return 0, err
	}
	defer store.Close()
	var total int64
	for _, c := range collections {
		n, err := store.CountRecords(ctx, c)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// postmasterPID finds the server's postmaster when it runs on this machine
// and its data directory is readable (0 otherwise).
func postmasterPID(ctx context.Context, db *sql.DB) int {
	var dir string
	if err := db.QueryRowContext(ctx, "SELECT current_setting('data_directory')").Scan(&dir); err != nil {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	return pid
}

// prefillBatch is the number of changes per ApplyBatch of the prefill.
const prefillBatch = 10_000

// prefill writes events (Jetstream commit events) into the database
// through the storage layer, in batches of prefillBatch, then leaves the
// database settled (checkpointed, or vacuumed and analysed) as a service
// would find it after a quiet moment.
func prefill(ctx context.Context, dbURL string, events []jetstreamtest.Event) error {
	store, err := appview.OpenStore(ctx, dbURL)
	if err != nil {
		return err
	}
	defer store.Close()
	start := time.Now()
	ops := make([]storage.RecordOp, 0, prefillBatch)
	now := time.Now()
	for i, e := range events {
		var ev struct {
			DID    string `json:"did"`
			Commit struct {
				Rev        string          `json:"rev"`
				Operation  string          `json:"operation"`
				Collection string          `json:"collection"`
				RKey       string          `json:"rkey"`
				Record     json.RawMessage `json:"record"`
				CID        string          `json:"cid"`
			} `json:"commit"`
		}
		if err := json.Unmarshal(e.JSON, &ev); err != nil {
			return fmt.Errorf("generated event is not JSON: %w", err)
		}
		c := ev.Commit
		ops = append(ops, storage.RecordOp{Delete: c.Operation == "delete", Record: storage.Record{
			URI: "at://" + ev.DID + "/" + c.Collection + "/" + c.RKey, DID: ev.DID, Collection: c.Collection, RKey: c.RKey,
			CID: c.CID, Rev: c.Rev, Value: c.Record, IndexedAt: now,
		}})
		if len(ops) == prefillBatch || i == len(events)-1 {
			if err := store.ApplyBatch(ctx, storage.Batch{Ops: ops}); err != nil {
				return err
			}
			ops = ops[:0]
		}
		if (i+1)%200_000 == 0 {
			log.Printf("prefill: %d/%d events (%s)", i+1, len(events), time.Since(start).Round(time.Second))
		}
	}
	if err := benchkit.Settle(ctx, store, dbURL); err != nil {
		return err
	}
	log.Printf("prefill: %d events written in %s (%.0f/s)", len(events), time.Since(start).Round(100*time.Millisecond),
		float64(len(events))/time.Since(start).Seconds())
	return nil
}
