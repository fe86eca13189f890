package apiclients_test

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/storage/storagetest"
)

// BenchmarkAllowPerInstance is the rate-limit check as Lexview makes it
// with several instances: an in-memory bucket sized to 1/n of the limits,
// n read on every check (here from an atomic, as the instance registry
// supplies it).
func BenchmarkAllowPerInstance(b *testing.B) {
	store := storagetest.SQLite(b)
	reg := apiclients.NewRegistry(apiclients.RegistryOptions{Store: store, Defaults: apiclients.Limits{Capacity: 100, RefillRate: 2}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	var live atomic.Int64
	live.Store(3)
	reg.SetInstances(func() int { return int(live.Load()) })
	mgr := apiclients.NewManager(apiclients.ManagerOptions{Store: store, Registry: reg})
	c, _, err := mgr.Create(context.Background(), apiclients.NewClient{
		Name: "bench", ClientIDURL: "https://bench.test/m.json", ClientURI: "https://bench.test",
		RedirectURIs: []string{"https://bench.test/cb"}, CreatedBy: "did:plc:bench",
		RateLimitCapacity: ptr(1 << 30), RateLimitRefillRate: ptr(1e9),
	})
	if err != nil {
		b.Fatal(err)
	}
	cl, err := reg.Identify(context.Background(), apiclients.Credentials{Key: c.Key})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if ok, _ := reg.Allow(cl); !ok {
				b.Fatal("rate limited")
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if ok, _ := reg.Allow(cl); !ok {
					b.Error("rate limited")
					return
				}
			}
		})
	})
}

// sharedBucketDDL and takeToken are what a bucket shared by every
// instance in PostgreSQL would be: one row per client, and one statement
// per request that refills the level by the time elapsed on the
// database's clock, takes a token when there is one, and returns whether
// it did. They are measured here against the per-instance buckets
// Lexview uses, and not wired in (docs/security.md explains the choice).
const (
	sharedBucketDDL = `CREATE TABLE rate_buckets (
		client_key TEXT PRIMARY KEY,
		capacity   DOUBLE PRECISION NOT NULL,
		refill     DOUBLE PRECISION NOT NULL,
		tokens     DOUBLE PRECISION NOT NULL,
		updated_at TIMESTAMPTZ NOT NULL
	)`
	takeToken = `UPDATE rate_buckets b
		SET tokens = t.level - CASE WHEN t.level >= 1 THEN 1 ELSE 0 END, updated_at = statement_timestamp()
		FROM (SELECT client_key, LEAST(capacity,
				tokens + GREATEST(0, EXTRACT(EPOCH FROM statement_timestamp() - updated_at)) * refill) AS level
			FROM rate_buckets WHERE client_key = $1) t
		WHERE b.client_key = t.client_key
		RETURNING t.level >= 1`
)

// BenchmarkSharedBucketPostgres is that shared bucket's check: serially
// (the latency added to each request), from 8 goroutines per core on one
// client (every instance's requests of one client queue on its row lock),
// and on distinct clients.
func BenchmarkSharedBucketPostgres(b *testing.B) {
	ctx := context.Background()
	db, err := sql.Open("postgres", storagetest.PostgresURL(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	if _, err := db.ExecContext(ctx, sharedBucketDDL); err != nil {
		b.Fatal(err)
	}
	const clientsN = 1000
	for i := range clientsN {
		if _, err := db.ExecContext(ctx, `INSERT INTO rate_buckets VALUES ($1, 1e12, 1e12, 1e12, now())`, "hvc_"+strconv.Itoa(i)); err != nil {
			b.Fatal(err)
		}
	}
	stmt, err := db.PrepareContext(ctx, takeToken)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stmt.Close() })
	take := func(b *testing.B, key string) bool {
		var ok bool
		if err := stmt.QueryRowContext(ctx, key).Scan(&ok); err != nil {
			b.Error(err)
			return false
		}
		if !ok {
			b.Error("rate limited")
		}
		return ok
	}
	b.Run("serial", func(b *testing.B) {
		for b.Loop() {
			if !take(b, "hvc_0") {
				return
			}
		}
	})
	b.Run("parallel-one-client", func(b *testing.B) {
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if !take(b, "hvc_0") {
					return
				}
			}
		})
	})
	var seq atomic.Int64
	b.Run("parallel-many-clients", func(b *testing.B) {
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if !take(b, "hvc_"+strconv.Itoa(int(seq.Add(1)%clientsN))) {
					return
				}
			}
		})
	})
}
