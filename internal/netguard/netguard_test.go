package netguard_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/lexview/lexview/internal/netguard"
)

func TestPublic(t *testing.T) {
	for addr, want := range map[string]bool{
		"8.8.8.8": true, "2606:4700::1111": true,
		"127.0.0.1": false, "::1": false, "10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false,
		"169.254.169.254": false, "100.64.0.1": false, "0.0.0.0": false, "fe80::1": false, "fc00::1": false,
		"::ffff:127.0.0.1": false, "224.0.0.1": false,
	} {
		if got := netguard.Public(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Public(%s) = %v, want %v", addr, got, want)
		}
	}
}

func TestTransportRefusesPrivateUnlessAllowed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hi")) }))
	defer srv.Close()
	host := netguard.HostOf(srv.URL)

	guarded := &http.Client{Transport: netguard.NewTransport(netguard.Options{})}
	if _, err := guarded.Get(srv.URL); !errors.Is(err, netguard.ErrBlocked) {
		t.Fatalf("loopback reached: %v", err)
	}
	// A name that resolves to loopback is refused too (checked after resolution).
	if _, err := guarded.Get(strings.Replace(srv.URL, host, "localhost", 1)); !errors.Is(err, netguard.ErrBlocked) {
		t.Fatalf("localhost reached: %v", err)
	}
	for _, opt := range []netguard.Options{{AllowPrivate: true}, {AllowHosts: []string{host}}} {
		c := &http.Client{Transport: netguard.NewTransport(opt)}
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatalf("%+v: %v", opt, err)
		}
		resp.Body.Close()
	}
}
