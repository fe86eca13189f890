package netguard_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/lexview/lexview/internal/netguard"
)

func TestPublic(t *testing.T) {
	for addr, want := range map[string]bool{
		"8.8.8.8": true, "2606:4700::1111": true, "64:ff9b::8.8.8.8": true, "2002:808:808::1": true,
		"127.0.0.1": false, "::1": false, "10.1.2.3": false, "169.254.169.254": false, "0.0.0.0": false,
		"::ffff:127.0.0.1": false, "::127.0.0.1": false, "64:ff9b::10.0.0.1": false, "2002:7f00:1::1": false,
		"198.18.0.1": false, "192.0.0.1": false, "240.0.0.1": false, "224.0.0.1": false, "ff02::1": false,
	} {
		if got := netguard.Public(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Public(%s) = %v, want %v", addr, got, want)
		}
	}
}

// get fetches url through c and returns the status, or the error.
func get(c *http.Client, url string) (int, error) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func TestTransportRefusesPrivateUnlessAllowed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hi")) }))
	defer srv.Close()
	host := netguard.HostOf(srv.URL)

	guarded := &http.Client{Transport: netguard.NewTransport(netguard.Options{})}
	if _, err := get(guarded, srv.URL); !errors.Is(err, netguard.ErrBlocked) {
		t.Fatalf("loopback reached: %v", err)
	}
	// A name that resolves to loopback is refused too (checked after resolution).
	if _, err := get(guarded, strings.Replace(srv.URL, host, "localhost", 1)); !errors.Is(err, netguard.ErrBlocked) {
		t.Fatalf("localhost reached: %v", err)
	}
	for _, opt := range []netguard.Options{{AllowPrivate: true}, {AllowOrigins: []string{srv.URL}}} {
		c := &http.Client{Transport: netguard.NewTransport(opt)}
		if _, err := get(c, srv.URL); err != nil {
			t.Fatalf("%+v: %v", opt, err)
		}
	}
}

// TestAllowedOriginNotHost: with one origin on 127.0.0.1 allowed, another
// port of the same host is refused, directly or through a redirect from
// the allowed origin, and so are other spellings of the allowed one.
func TestAllowedOriginNotHost(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("other")) }))
	defer other.Close()
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-other":
			http.Redirect(w, r, other.URL+"/", http.StatusFound)
		case "/to-self":
			http.Redirect(w, r, "/", http.StatusFound)
		default:
			w.Write([]byte("allowed"))
		}
	}))
	defer allowed.Close()

	c := &http.Client{Transport: netguard.NewTransport(netguard.Options{AllowOrigins: []string{allowed.URL + "/plc"}})}
	for _, url := range []string{allowed.URL + "/", allowed.URL + "/to-self"} {
		if status, err := get(c, url); err != nil || status != http.StatusOK {
			t.Errorf("%s: %d %v", url, status, err)
		}
	}
	for _, url := range []string{
		other.URL + "/",           // the same host, another port
		allowed.URL + "/to-other", // a redirect there
		strings.Replace(allowed.URL, "127.0.0.1", "localhost", 1), // another name for the allowed origin
		strings.Replace(allowed.URL, "http:", "https:", 1),        // another scheme on the allowed port
	} {
		if status, err := get(c, url); !errors.Is(err, netguard.ErrBlocked) {
			t.Errorf("%s reached: %d %v", url, status, err)
		}
	}

	// A request made with the context of one to the allowed origin is
	// judged on its own origin.
	resp, err := c.Get(allowed.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	req, _ := http.NewRequestWithContext(resp.Request.Context(), http.MethodGet, strings.Replace(allowed.URL, "http:", "https:", 1), nil)
	if _, err := c.Do(req); !errors.Is(err, netguard.ErrBlocked) {
		t.Errorf("inherited context: %v", err)
	}
}

// TestAllowedWebSocketOrigin: a ws:// origin allows the WebSocket
// handshake to it (an http request on the wire), not the host's other ports.
func TestAllowedWebSocketOrigin(t *testing.T) {
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		conn.Close(websocket.StatusNormalClosure, "")
	})
	allowed := httptest.NewServer(echo)
	defer allowed.Close()
	other := httptest.NewServer(echo)
	defer other.Close()
	wsURL := func(srv *httptest.Server) string { return "ws" + strings.TrimPrefix(srv.URL, "http") + "/subscribe" }

	c := &http.Client{Transport: netguard.NewTransport(netguard.Options{AllowOrigins: []string{wsURL(allowed)}})}
	conn, _, err := websocket.Dial(context.Background(), wsURL(allowed), &websocket.DialOptions{HTTPClient: c})
	if err != nil {
		t.Fatalf("allowed origin: %v", err)
	}
	conn.CloseNow()
	if _, _, err := websocket.Dial(context.Background(), wsURL(other), &websocket.DialOptions{HTTPClient: c}); !errors.Is(err, netguard.ErrBlocked) {
		t.Fatalf("other port: %v", err)
	}
}
