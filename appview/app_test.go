package appview_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/storage/storagetest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestNewOpensDatabaseURL(t *testing.T) {
	t.Parallel()
	urls := map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "nested", "app.db") },
		"postgres": func(t *testing.T) string { return storagetest.PostgresURL(t) },
	}
	for name, mk := range urls {
		t.Run(name, func(t *testing.T) {
			app, err := appview.New(appview.Config{
				DatabaseURL: mk(t),
				Logger:      quiet,
				Security:    appview.SecurityConfig{TokenEncryptionKey: testenv.TokenKey},
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := app.Store().Dialect(); got != name {
				t.Fatalf("dialect %s", got)
			}
			if err := app.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestConfigRefusals(t *testing.T) {
	t.Parallel()
	db := func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "a.db") }
	for name, cfg := range map[string]appview.Config{
		"placeholder secret": {Security: appview.SecurityConfig{SessionSecret: appview.SessionSecretPlaceholder}},
		"short secret":       {Security: appview.SecurityConfig{SessionSecret: "too-short"}},
		"bad port":           {Port: 70000},
		"bad database":       {DatabaseURL: "mysql://nope"},
	} {
		t.Run(name, func(t *testing.T) {
			if cfg.DatabaseURL == "" {
				cfg.DatabaseURL = db(t)
			}
			cfg.Logger = quiet
			if _, err := appview.New(cfg); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	app, err := appview.New(appview.Config{
		DatabaseURL: db(t),
		Logger:      quiet,
		Security:    appview.SecurityConfig{SessionSecret: strings.Repeat("s", 32)},
	})
	if err != nil {
		t.Fatalf("32-byte secret refused: %v", err)
	}
	app.Shutdown(context.Background())
}

func TestRunServesUntilCancelled(t *testing.T) {
	t.Parallel()
	app, err := appview.New(appview.Config{DatabaseURL: "sqlite://" + filepath.Join(t.TempDir(), "r.db"), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cfg := app.Config()
	if cfg.Host != "127.0.0.1" || cfg.Port != 3000 || cfg.PublicURL != "http://127.0.0.1:3000" {
		t.Fatalf("defaults: %+v", cfg)
	}
	app2, err := appview.New(appview.Config{
		Store:  app.Store(),
		Port:   -1,
		Logger: quiet,
		Ingest: appview.IngestConfig{JetstreamURL: "off"},
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := app2.Listen()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- app2.Serve(ctx, ln) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("health while running: %v", err)
	}
	resp.Body.Close()
	if err := app2.Start(context.Background()); err == nil {
		t.Fatal("second Start accepted")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	if _, err := http.Get("http://" + ln.Addr().String() + "/health"); err == nil {
		t.Fatal("still serving after shutdown")
	}
	// The adopted store stays open: app2 did not own it.
	if _, err := app.Store().CountRecords(context.Background(), ""); err != nil {
		t.Fatalf("adopted store was closed: %v", err)
	}
	if err := app2.Shutdown(context.Background()); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	app.Shutdown(context.Background())
}
