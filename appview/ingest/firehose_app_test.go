package ingest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"syscall"
	"testing"
	"time"

	comatproto "github.com/bluesky-social/indigo/api/atproto"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/ingest"
	"github.com/lexview/lexview/appview/internal/testing/firehosetest"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestFirehoseIntoStore runs the firehose source in an App, on both
// stores: verified records are indexed with the repository's state and
// the relay's sequence number in one transaction, a refused commit is in
// the event log with its reason, and a gap is recorded and starts a
// resync (backfill by CAR; TestResync in package backfill covers one that
// succeeds).
func TestFirehoseIntoStore(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		ctx := context.Background()
		server := firehosetest.NewServer()
		defer server.Close()
		dir := firehosetest.NewDirectory()
		alice, err := firehosetest.NewRepo("did:plc:alice")
		if err != nil {
			t.Fatal(err)
		}
		dir.Publish(alice.DID, alice.Key)
		store := open(t)
		src := &ingest.Firehose{URL: server.URL, Directory: dir, HTTPClient: server.Client(),
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		app := startApp(t, store, appview.Config{
			Ingest:  appview.IngestConfig{EventSource: src},
			Network: appview.NetworkConfig{Directory: dir},
		})
		defer stop(t, app)
		putLexicon(t, app, "app.test.post")
		eventually(t, "the subscription", func() bool { return len(server.Cursors()) == 1 })

		commit := func(ops ...firehosetest.Op) *comatproto.SyncSubscribeRepos_Commit {
			c, err := alice.Commit(ops...)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		c1 := commit(post("a", "one"))
		server.Publish(c1)
		forged := commit(post("f", "forged"))
		forged.Blocks[len(forged.Blocks)-5] ^= 1
		server.Publish(forged)
		c3 := commit(post("b", "two")) // its since is the forged commit's rev: a gap
		last := server.Publish(c3)
		eventually(t, "the cursor", func() bool {
			c, err := store.GetStreamCursor(ctx, ingest.CursorKey(ingest.FirehoseName))
			return err == nil && c == last
		})
		for rkey, want := range map[string]bool{"a": true, "f": false, "b": true} {
			if _, found := text(t, store, "at://did:plc:alice/app.test.post/"+rkey); found != want {
				t.Errorf("record %s indexed: %v, want %v", rkey, found, want)
			}
		}
		st, err := store.GetRepoState(ctx, alice.DID)
		if err != nil || st.Rev != c3.Rev {
			t.Fatalf("repo state %+v %v, want rev %s", st, err, c3.Rev)
		}
		refused, _, err := store.ListEvents(ctx, storage.EventFilter{Type: "source.event_skipped", Limit: 10})
		var detail struct{ Reason string }
		if err != nil || len(refused) != 1 || json.Unmarshal(refused[0].Detail, &detail) != nil || detail.Reason != ingest.RefuseBadCommit {
			t.Fatalf("refusals in the event log: %+v %v", refused, err)
		}
		eventually(t, "the resync entries", func() bool {
			gaps, _, err := store.ListEvents(ctx, storage.EventFilter{Type: "source.resync_needed", Limit: 10})
			return err == nil && len(gaps) == 2 // the refused commit, then c3's since
		})
		// The gap starts a fetch of the repository by CAR; alice's DID
		// document names no PDS here, so it fails, and says so.
		eventually(t, "the resync attempt", func() bool {
			failed, _, err := store.ListEvents(ctx, storage.EventFilter{Type: "source.resync_failed", Limit: 10})
			return err == nil && len(failed) >= 1 && failed[0].Subject == alice.DID
		})
	})
}

// BenchmarkFirehoseIntoSQLite measures verified commit events per second
// from the stand-in firehose into SQLite through the App (verification,
// writer, batches): b.N real-shaped commits (one post each, across 1,000
// repositories of growing trees) are published first, then the source
// reads them from cursor 0.
func BenchmarkFirehoseIntoSQLite(b *testing.B) {
	ctx := context.Background()
	server := firehosetest.NewServer()
	defer server.Close()
	dir := firehosetest.NewDirectory()
	const nrepos = 1000
	repos := make([]*firehosetest.Repo, nrepos)
	for i := range repos {
		r, err := firehosetest.NewRepo(fmt.Sprintf("did:plc:bench%05d", i))
		if err != nil {
			b.Fatal(err)
		}
		dir.Publish(r.DID, r.Key)
		repos[i] = r
	}
	for i := range b.N {
		r := repos[i%nrepos]
		c, err := r.Commit(firehosetest.Op{Collection: "app.test.post", RKey: fmt.Sprintf("3k%011d", i), Record: map[string]any{
			"$type": "app.test.post", "text": fmt.Sprintf("post %d: a line of text of the length people write, give or take.", i),
			"createdAt": "2026-01-01T00:00:00.000Z", "langs": []any{"en"},
		}})
		if err != nil {
			b.Fatal(err)
		}
		server.Publish(c)
	}
	store := storagetest.SQLite(b)
	// The source starts from the first event: a stored cursor of 0 events.
	if err := store.ApplyBatch(ctx, storage.Batch{Cursors: []storage.StreamCursor{{Name: ingest.CursorKey(ingest.FirehoseName), Value: 0}}}); err != nil {
		b.Fatal(err)
	}
	src := &ingest.Firehose{URL: server.URL, Directory: dir, HTTPClient: server.Client(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	app, err := appview.New(appview.Config{
		Store:    store,
		Ingest:   appview.IngestConfig{EventSource: src},
		Network:  appview.NetworkConfig{Directory: dir},
		Security: appview.SecurityConfig{TokenEncryptionKey: testenv.TokenKey},
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := app.Lexicons().Put(ctx, lexiconUpload("app.test.post")); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu0 := cpuTime(b)
	start := time.Now()
	if err := app.Start(ctx); err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := store.GetStreamCursor(ctx, ingest.CursorKey(ingest.FirehoseName))
		if err == nil && c == int64(b.N) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("cursor %d (%v) after a minute, want %d; source %+v", c, err, b.N, src.Status())
		}
		time.Sleep(2 * time.Millisecond)
	}
	took := time.Since(start)
	cpu := cpuTime(b) - cpu0
	b.StopTimer()
	b.ReportMetric(float64(b.N)/took.Seconds(), "events/s")
	// CPU of the whole process (source, writer, SQLite and the stand-in
	// server) per event: on a shared machine the wall-clock rate depends
	// on the other loads, this does not.
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/event")
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MB") // Linux: kilobytes
	}
	if n := src.Counts(); n.Verified != int64(b.N) {
		b.Fatalf("verified %d of %d", n.Verified, b.N)
	}
	shutdown, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := app.Shutdown(shutdown); err != nil {
		b.Fatal(err)
	}
}

func lexiconUpload(id string) lexicon.Upload {
	return lexicon.Upload{Document: json.RawMessage(recordLexicon(id))}
}

// cpuTime is the CPU time (user and system) the process used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
