package domains_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/service/domains"
	"github.com/lexview/lexview/storage/storagetest"
)

// newService returns a domains service whose primary domain is made from
// publicURL.
func newService(t *testing.T, publicURL string) *domains.Service {
	t.Helper()
	store, log := storagetest.SQLite(t), slog.New(slog.DiscardHandler)
	s := domains.New(domains.Options{Store: store, Events: eventlog.New(eventlog.Options{Store: store, Logger: log}),
		PublicURL: publicURL, Now: time.Now, Logger: log})
	if err := s.EnsurePrimary(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestMatchLoopbackAliases: with a loopback PUBLIC_URL, every loopback
// name of the machine on the same port matches its domain; another port
// or a real host does not. With a public PUBLIC_URL, only registered
// hosts match, loopback ones included.
func TestMatchLoopbackAliases(t *testing.T) {
	ctx := context.Background()
	local := newService(t, "http://127.0.0.1:3000")
	for host, want := range map[string]bool{
		"127.0.0.1:3000":      true,
		"localhost:3000":      true,
		"LOCALHOST:3000":      true,
		"[::1]:3000":          true,
		"127.0.0.2:3000":      true,
		"app.localhost:3000":  true,
		"localhost:3001":      false,
		"localhost":           false,
		"[::1]":               false,
		"example.com:3000":    false,
		"10.0.0.1:3000":       false,
		"localhost.evil:3000": false,
	} {
		d, ok := local.Match(ctx, host)
		if ok != want || (ok && d.URL != "http://127.0.0.1:3000") {
			t.Errorf("loopback PUBLIC_URL, Host %q: %v %q, want %v", host, ok, d.URL, want)
		}
	}

	// Port 80 is the default port on both sides.
	if d, ok := newService(t, "http://localhost").Match(ctx, "127.0.0.1:80"); !ok || d.URL != "http://localhost" {
		t.Errorf("default port: %v %q", ok, d.URL)
	}

	public := newService(t, "https://appview.example.com")
	if _, err := public.Create(ctx, "did:plc:operator", "https://127.0.0.1:8443"); err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{
		"appview.example.com": true,
		"127.0.0.1:8443":      true,
		"localhost:8443":      false,
		"[::1]:8443":          false,
	} {
		if _, ok := public.Match(ctx, host); ok != want {
			t.Errorf("public PUBLIC_URL, Host %q: %v, want %v", host, ok, want)
		}
	}
}
