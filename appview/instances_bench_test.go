package appview_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/storage/storagetest"
)

// BenchmarkReadsAcrossInstances serves the first page of the default list
// query (as BenchmarkDefaultQuery/FirstPage) from 1, 2 and 3 App instances
// sharing one PostgreSQL database, each with its own connection pools,
// requests spread round-robin over them from parallel goroutines. All run
// in this one process on this machine's cores, so the figure is the cost
// per request of a deployment of N instances (leadership, heartbeats and
// the change feed included), not the throughput of N machines
// (docs/operations.md reasons about those).
func BenchmarkReadsAcrossInstances(b *testing.B) {
	ctx := context.Background()
	dbURL := storagetest.PostgresURL(b)
	first, err := appview.OpenStore(ctx, dbURL)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { first.Close() })
	if err := first.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	apps := []*appview.App{queryBenchApp(b, first)}
	for len(apps) < 3 {
		s, err := appview.OpenStore(ctx, dbURL)
		if err != nil {
			b.Fatal(err)
		}
		app, err := appview.New(appview.Config{
			Store:    s,
			Ingest:   appview.IngestConfig{JetstreamURL: "off"},
			Security: appview.SecurityConfig{SessionSecret: "bench-session-secret-0123456789abcdef", TokenEncryptionKey: "bGV4dmlldy1iZW5jaHF1ZXJ5LXRva2VuLWtleS0zMiE="},
		})
		if err != nil {
			b.Fatal(err)
		}
		apps = append(apps, app)
	}
	for _, app := range apps {
		if err := app.Start(ctx); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = app.Shutdown(context.WithoutCancel(ctx)) })
	}
	target := "/xrpc/" + benchListQuery + "?limit=20"
	for n := 1; n <= 3; n++ {
		b.Run(fmt.Sprintf("instances=%d", n), func(b *testing.B) {
			var next atomic.Uint64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				req := benchRequest(b, target)
				w := &discardResponse{header: http.Header{}}
				for pb.Next() {
					w.reset()
					apps[next.Add(1)%uint64(n)].ServeHTTP(w, req)
					if w.status != http.StatusOK {
						b.Errorf("status %d", w.status)
						return
					}
				}
			})
		})
	}
}
