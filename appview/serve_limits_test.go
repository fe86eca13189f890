package appview_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/web/server"
)

// serve runs an App on a free port of 127.0.0.1 until the test ends and
// returns its address.
func serve(t *testing.T) string {
	t.Helper()
	app, err := appview.New(appview.Config{
		DatabaseURL: "sqlite://" + filepath.Join(t.TempDir(), "s.db"),
		Port:        -1,
		Logger:      quiet,
		Ingest:      appview.IngestConfig{JetstreamURL: "off"},
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := app.Listen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return ln.Addr().String()
}

// TestOversizedHeadersGetJSON431: a request head up to server.MaxHeaderBytes
// is served; a larger one, up to net/http's own limit, is answered 431
// with a JSON error by Lexview rather than net/http's plain text.
func TestOversizedHeadersGetJSON431(t *testing.T) {
	t.Parallel()
	addr := serve(t)
	for size, want := range map[int]int{
		server.MaxHeaderBytes:     http.StatusOK,
		server.MaxHeaderBytes + 1: http.StatusRequestHeaderFieldsTooLarge,
		3 * server.MaxHeaderBytes: http.StatusRequestHeaderFieldsTooLarge,
	} {
		head := "GET /health HTTP/1.1\r\nHost: " + addr + "\r\nX-Pad: \r\n\r\n"
		head = strings.Replace(head, "X-Pad: ", "X-Pad: "+strings.Repeat("a", size-len(head)), 1)
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(conn, head); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode != want {
			t.Fatalf("%d bytes: status %d, want %d: %s", size, resp.StatusCode, want, body)
		}
		if want == http.StatusOK {
			continue
		}
		var e struct {
			Error string `json:"error"`
		}
		if err := json.Unmarshal(body, &e); err != nil || e.Error == "" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("%d bytes: not a JSON error: %s %q (%v)", size, resp.Header.Get("Content-Type"), body, err)
		}
	}
}

// TestEveryAnswerIsNosniff: JSON answers of every kind (success, client
// error, refusal, 431, the admin API, a panic's 500 aside) and the pages
// carry X-Content-Type-Options: nosniff.
func TestEveryAnswerIsNosniff(t *testing.T) {
	t.Parallel()
	addr := serve(t)
	for _, path := range []string{
		"/health", "/xrpc/_health", "/xrpc/app.none.missing", "/xrpc/com.atproto.repo.getRecord",
		"/admin/stats", "/nowhere", "/dashboard/", "/.well-known/did.json",
	} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET %s (%d): X-Content-Type-Options %q", path, resp.StatusCode, got)
		}
	}
}
