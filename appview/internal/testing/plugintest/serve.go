package plugintest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// Serve builds the plugin package at dir (relative to the module root)
// and serves its manifest.json and module as an install fetches them, at
// /<id>/manifest.json and /<id>/<module> on a test server. It returns the
// manifest's URL and the module's SHA-256 (hex), for a pinned install.
func Serve(t testing.TB, dir string) (manifestURL, sum string) {
	t.Helper()
	bin := Build(t, dir)
	mf, err := os.ReadFile(filepath.Join(moduleRoot(t), dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var head struct {
		ID   string `json:"id"`
		WASM string `json:"wasm"`
	}
	if err := json.Unmarshal(mf, &head); err != nil || head.ID == "" || head.WASM == "" {
		t.Fatalf("%s/manifest.json: no id or wasm (%v)", dir, err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/" + head.ID + "/manifest.json":
			_, _ = w.Write(mf)
		case "/" + head.ID + "/" + head.WASM:
			_, _ = w.Write(bin)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	h := sha256.Sum256(bin)
	return srv.URL + "/" + head.ID + "/manifest.json", hex.EncodeToString(h[:])
}
