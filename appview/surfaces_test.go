package appview_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/testing/metricstest"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestSeparateSurfaces: XRPCHandler serves the public surface (the
// dashboard and the root's redirect to it included) and never /admin/;
// AdminHandler serves /admin/ and nothing else; Handler serves both.
func TestSeparateSurfaces(t *testing.T) {
	t.Parallel()
	app, err := appview.New(appview.Config{
		Store:    storagetest.SQLite(t),
		Logger:   quiet,
		Ingest:   appview.IngestConfig{JetstreamURL: "off"},
		Security: appview.SecurityConfig{TokenEncryptionKey: testenv.TokenKey},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Shutdown(context.Background())
	get := func(h http.Handler, path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec.Code, strings.TrimSpace(rec.Body.String())
	}
	const notFound = `{"error":"not found"}`
	for _, tc := range []struct {
		name    string
		handler http.Handler
		path    string
		status  int
		body    string // "" for any
	}{
		{"xrpc: health", app.XRPCHandler(), "/health", 200, "ok"},
		{"xrpc: an XRPC method", app.XRPCHandler(), "/xrpc/com.example.nothing", 0, ""},
		{"xrpc: OAuth keys", app.XRPCHandler(), "/oauth/clients/x/jwks.json", 0, ""},
		{"xrpc: no admin API", app.XRPCHandler(), "/admin/lexicons", 404, notFound},
		{"xrpc: no admin API root", app.XRPCHandler(), "/admin/", 404, notFound},
		{"xrpc: the root redirects to the dashboard", app.XRPCHandler(), "/", 302, "<a href=\"/dashboard/\">Found</a>."},
		{"xrpc: the dashboard", app.XRPCHandler(), "/dashboard/signin", 200, ""},
		{"admin: the admin API", app.AdminHandler(), "/admin/lexicons", 401, ""},
		{"admin: no health", app.AdminHandler(), "/health", 404, notFound},
		{"admin: no XRPC", app.AdminHandler(), "/xrpc/com.example.nothing", 404, notFound},
		{"admin: no OAuth", app.AdminHandler(), "/oauth/clients/x/jwks.json", 404, notFound},
		{"admin: no dashboard", app.AdminHandler(), "/dashboard/", 404, notFound},
		{"admin: no root redirect", app.AdminHandler(), "/", 404, notFound},
		{"all: health", app.Handler(), "/health", 200, "ok"},
		{"all: the admin API", app.Handler(), "/admin/lexicons", 401, ""},
		{"all: unknown", app.Handler(), "/nowhere", 404, notFound},
		{"all: the root redirects to the dashboard", app.Handler(), "/", 302, "<a href=\"/dashboard/\">Found</a>."},
		{"all: the dashboard", app.Handler(), "/dashboard/", 200, ""},
	} {
		status, body := get(tc.handler, tc.path)
		if tc.status == 0 {
			// Served by the public surface: not the catch-all 404.
			if status == 404 && body == notFound {
				t.Errorf("%s: %d %s", tc.name, status, body)
			}
			continue
		}
		if status != tc.status || tc.body != "" && body != tc.body {
			t.Errorf("%s: %d %s, want %d %s", tc.name, status, body, tc.status, tc.body)
		}
	}
	// The whole surface answers exactly as its two halves do.
	for _, path := range []string{"/xrpc/com.example.nothing", "/oauth/clients/x/jwks.json"} {
		s1, b1 := get(app.Handler(), path)
		s2, b2 := get(app.XRPCHandler(), path)
		if s1 != s2 || b1 != b2 {
			t.Errorf("%s: Handler %d %s, XRPCHandler %d %s", path, s1, b1, s2, b2)
		}
	}
	s1, b1 := get(app.Handler(), "/admin/lexicons")
	s2, b2 := get(app.AdminHandler(), "/admin/lexicons")
	if s1 != s2 || b1 != b2 {
		t.Errorf("/admin/lexicons: Handler %d %s, AdminHandler %d %s", s1, b1, s2, b2)
	}
}

// TestMetricsRegisterer: with Config.Metrics.Registerer, Lexview's metrics
// are registered there (without Go runtime metrics, which are the
// program's), record what the App does, block a second App on the same
// registry, and are unregistered by Shutdown.
func TestMetricsRegisterer(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		reg := prometheus.NewRegistry()
		env := testenv.New(t, store, appview.Config{Metrics: appview.MetricsConfig{Registerer: reg}})
		putNoteLexicon(t, env.App)
		ctx := context.Background()
		res, err := env.App.Writer().Write(ctx, "embedder", []storage.Change{noteChange("did:plc:m", "3kaaa", "x")})
		if err != nil || res.Accepted != 1 {
			t.Fatalf("Write: %+v %v", res, err)
		}
		if v, ok := metricstest.Value(t, reg, "lexview_records_indexed_total", map[string]string{"source": "embedder", "collection": "app.test.note"}); !ok || v != 1 {
			t.Fatalf("lexview_records_indexed_total = %v, %v", v, ok)
		}
		if v, ok := metricstest.Value(t, reg, "lexview_batch_size", nil); !ok || v != 1 {
			t.Fatalf("lexview_batch_size count = %v, %v", v, ok)
		}
		if _, ok := metricstest.Value(t, reg, "go_goroutines", nil); ok {
			t.Fatal("Go runtime metrics registered in the embedder's registry")
		}
		if _, err := appview.New(appview.Config{
			Store:    store,
			Logger:   quiet,
			Ingest:   appview.IngestConfig{JetstreamURL: "off"},
			Security: appview.SecurityConfig{TokenEncryptionKey: testenv.TokenKey},
			Metrics:  appview.MetricsConfig{Registerer: reg},
		}); err == nil || !strings.Contains(err.Error(), "register metrics") {
			t.Fatalf("a second App on the same registry: %v", err)
		}
		if err := env.App.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if families, _ := reg.Gather(); len(families) != 0 {
			t.Fatalf("%d metric families left after Shutdown", len(families))
		}
		again, err := appview.New(appview.Config{
			Store:    store,
			Logger:   quiet,
			Ingest:   appview.IngestConfig{JetstreamURL: "off"},
			Security: appview.SecurityConfig{TokenEncryptionKey: testenv.TokenKey},
			Metrics:  appview.MetricsConfig{Registerer: reg},
		})
		if err != nil {
			t.Fatalf("a new App on the registry after Shutdown: %v", err)
		}
		again.Shutdown(ctx)
	})
}

// TestMetricsListener: MetricsAddr serves every metric, Go runtime ones
// included, on its own listener, also when a registerer is given; Shutdown
// closes the listener.
func TestMetricsListener(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0") // a free port: release it
	if err != nil {
		t.Fatal(err)
	}
	addr := taken.Addr().String()
	taken.Close()
	reg := prometheus.NewRegistry()
	env := testenv.New(t, storagetest.SQLite(t), appview.Config{Metrics: appview.MetricsConfig{Addr: addr, Registerer: reg}})
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"lexview_write_queue_depth", "go_goroutines"} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if _, ok := metricstest.Value(t, reg, "lexview_write_queue_depth", nil); !ok {
		t.Error("the registerer lacks lexview_write_queue_depth")
	}
	if err := env.App.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get("http://" + addr + "/metrics"); err == nil {
		t.Fatal("metrics still served after Shutdown")
	}
}
