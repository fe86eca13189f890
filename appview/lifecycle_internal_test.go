package appview

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// heldStore holds every batch with records until hold is closed, and
// notes Close instead of closing (the test's store is closed by the test).
type heldStore struct {
	storage.Store
	hold    chan struct{}
	entered chan struct{}
	closed  atomic.Bool
}

func (h *heldStore) ApplyBatch(ctx context.Context, b storage.Batch) error {
	if len(b.Ops) > 0 {
		select {
		case h.entered <- struct{}{}:
		default:
		}
		<-h.hold
	}
	return h.Store.ApplyBatch(ctx, b)
}

func (h *heldStore) Close() error { h.closed.Store(true); return nil }

// TestShutdownDeadlineLeavesTheStoreOpen: when Shutdown's deadline passes
// while the writer is still committing what was queued, Shutdown says so
// and does not close the store (which the App owns here); a later
// Shutdown waits for the writer and then closes it.
func TestShutdownDeadlineLeavesTheStoreOpen(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		hs := &heldStore{Store: open(t), hold: make(chan struct{}), entered: make(chan struct{}, 1)}
		a, err := New(Config{
			Store:                 hs,
			Ingest:                IngestConfig{JetstreamURL: "off"},
			Logger:                slog.New(slog.NewTextHandler(io.Discard, nil)),
			Security:              SecurityConfig{TokenEncryptionKey: "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="},
			EventLogRetentionDays: -1,
		})
		if err != nil {
			t.Fatal(err)
		}
		a.ownsStore = true // as if New had opened it
		ctx := context.Background()
		doc := `{"lexicon":1,"id":"app.test.note","defs":{"main":{"type":"record","key":"any","record":{"type":"object","properties":{"text":{"type":"string"}}}}}}`
		if _, err := a.Lexicons().Put(ctx, lexicon.Upload{Document: json.RawMessage(doc)}); err != nil {
			t.Fatal(err)
		}
		if err := a.Start(ctx); err != nil {
			t.Fatal(err)
		}
		change := storage.Change{Op: storage.OpCreate, DID: "did:plc:held", Collection: "app.test.note", RKey: "k",
			CID: "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm", Record: json.RawMessage(`{"$type":"app.test.note","text":"x"}`)}
		if _, err := a.writer.Submit(ctx, "test", []storage.Change{change}, nil); err != nil {
			t.Fatal(err)
		}
		<-hs.entered

		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		err = a.Shutdown(short)
		// On a loaded machine other components may miss the 100 ms too;
		// the writer must be among those still running.
		_, running, _ := strings.Cut(fmt.Sprint(err), "shutdown incomplete: ")
		running, _, _ = strings.Cut(running, " still running")
		if err == nil || !errors.Is(err, context.DeadlineExceeded) || !slices.Contains(strings.Split(running, ", "), "writer") ||
			!strings.Contains(err.Error(), "store was left open") {
			t.Fatalf("Shutdown past its deadline = %v", err)
		}
		if hs.closed.Load() {
			t.Fatal("the store was closed while the writer was still committing")
		}
		if _, err := a.Writer().Write(ctx, "test", []storage.Change{change}); !errors.Is(err, ErrStopped) {
			t.Fatalf("Write during an incomplete Shutdown = %v", err)
		}

		close(hs.hold)
		if err := a.Shutdown(ctx); err != nil {
			t.Fatalf("the second Shutdown: %v", err)
		}
		if !hs.closed.Load() {
			t.Fatal("the store was not closed once everything stopped")
		}
		if _, err := hs.Store.GetRecord(ctx, change.URI()); err != nil {
			t.Fatalf("the held change was not committed: %v", err)
		}
		if err := a.Shutdown(ctx); err != nil {
			t.Fatalf("Shutdown after completion: %v", err)
		}
	})
}

// TestLifecycleOrder: parts start in list order and stop in reverse; a
// failing start stops those already started, in reverse.
func TestLifecycleOrder(t *testing.T) {
	t.Parallel()
	var log []string
	mk := func(name string, fail bool) *part {
		return &part{name: name, component: &recorder{name: name, fail: fail, log: &log}}
	}
	l := lifecycle{parts: []*part{mk("a", false), mk("b", false), mk("c", false)}}
	ctx := context.Background()
	if err := l.start(ctx, ctx, 2); err != nil {
		t.Fatal(err)
	}
	if err := l.start(ctx, ctx, 3); err != nil { // starts only c
		t.Fatal(err)
	}
	if err := l.stop(ctx); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(log, ", "); got != "start a, start b, start c, stop c, stop b, stop a" {
		t.Fatalf("order: %s", got)
	}

	log = nil
	l = lifecycle{parts: []*part{mk("a", false), mk("b", false), mk("bad", true), mk("d", false)}}
	err := l.start(ctx, ctx, 4)
	if err == nil || !strings.Contains(err.Error(), "start bad: refused") {
		t.Fatalf("start = %v", err)
	}
	if got := strings.Join(log, ", "); got != "start a, start b, start bad, stop b, stop a" {
		t.Fatalf("order: %s", got)
	}
	if running := l.stillRunning(); len(running) != 0 {
		t.Fatalf("still running: %v", running)
	}
}

type recorder struct {
	name string
	fail bool
	log  *[]string
}

func (r *recorder) Start(context.Context) error {
	*r.log = append(*r.log, "start "+r.name)
	if r.fail {
		return errors.New("refused")
	}
	return nil
}

func (r *recorder) Stop(context.Context) error {
	*r.log = append(*r.log, "stop "+r.name)
	return nil
}
