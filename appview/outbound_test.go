package appview_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/internal/netguard"
)

// TestDefaultClientAllowsConfiguredOriginsOnly: with PLC_URL on a
// loopback port, the default outbound client (scripts' http.*, PDS calls)
// reaches that origin but not another port of the same host, directly or
// through a redirect.
func TestDefaultClientAllowsConfiguredOriginsOnly(t *testing.T) {
	t.Parallel()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer other.Close()
	plc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, other.URL, http.StatusFound)
		}
	}))
	defer plc.Close()
	app, err := appview.New(appview.Config{
		DatabaseURL: "sqlite://" + filepath.Join(t.TempDir(), "o.db"),
		Logger:      quiet,
		Ingest:      appview.IngestConfig{JetstreamURL: "off"},
		Network:     appview.NetworkConfig{PLCURL: plc.URL},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Shutdown(context.Background())
	c := app.Config().Network.HTTPClient

	resp, err := c.Get(plc.URL + "/did:plc:abc")
	if err != nil {
		t.Fatalf("PLC_URL refused: %v", err)
	}
	resp.Body.Close()
	for _, url := range []string{other.URL, plc.URL + "/redirect"} {
		if resp, err := c.Get(url); !errors.Is(err, netguard.ErrBlocked) {
			if err == nil {
				resp.Body.Close()
			}
			t.Errorf("%s: reached another port of PLC_URL's host: %v", url, err)
		}
	}
}
