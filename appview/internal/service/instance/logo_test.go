package instance_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/service/instance"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/sqlite"
)

// clock is a settable time.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestLogoCache: the logo the public endpoints read is kept in memory; a
// change through this process shows at once, one through another process
// sharing the database within the cache's 10 seconds.
func TestLogoCache(t *testing.T) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "logo.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	clk := &clock{now: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	newService := func() *instance.Service {
		return instance.New(instance.Options{Store: store, Events: eventlog.New(eventlog.Options{Store: store, Now: clk.Now, Logger: quiet}), Now: clk.Now, Logger: quiet})
	}
	here, there := newService(), newService()
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89")

	if _, err := there.Logo(ctx); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("no logo yet: %v", err)
	}
	if err := here.PutLogo(ctx, "did:plc:admin", "image/png", png); err != nil {
		t.Fatal(err)
	}
	if b, err := here.Logo(ctx); err != nil || b.ContentType != "image/png" {
		t.Fatalf("this process after its change: %v %v", b.ContentType, err)
	}
	if _, err := there.Logo(ctx); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("another process within the cache's time: %v", err)
	}
	clk.Add(11 * time.Second)
	if b, err := there.Logo(ctx); err != nil || len(b.Data) != len(png) {
		t.Fatalf("another process after the cache's time: %v", err)
	}
	if err := here.DeleteLogo(ctx, "did:plc:admin"); err != nil {
		t.Fatal(err)
	}
	if _, err := here.Logo(ctx); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("this process after deleting: %v", err)
	}
	if b, err := here.Branding(ctx); err != nil || b.HasLogo {
		t.Fatalf("branding after deleting: %+v %v", b, err)
	}
}
