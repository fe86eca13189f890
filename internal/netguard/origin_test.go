package netguard

import (
	"net/url"
	"testing"
)

func TestOriginOf(t *testing.T) {
	for raw, want := range map[string]string{
		"http://vm:2582":                     "http://vm:2582",
		"http://VM:2582/some/path?q=1#f":     "http://vm:2582",
		"https://plc.directory":              "https://plc.directory:443",
		"https://plc.directory:443/":         "https://plc.directory:443",
		"http://relay.example":               "http://relay.example:80",
		"wss://jetstream.example/subscribe":  "https://jetstream.example:443",
		"ws://127.0.0.1:6008/subscribe":      "http://127.0.0.1:6008",
		"WS://127.0.0.1":                     "http://127.0.0.1:80",
		"http://[::1]:8080":                  "http://[::1]:8080",
		"http://[0:0::1]:8080":               "http://[::1]:8080",
		"https://user:pw@host.example:8443/": "https://host.example:8443",
		"off":                                "",
		"":                                   "",
		"ftp://host.example":                 "",
		"http:///path":                       "",
		"//host.example:80":                  "",
	} {
		got := ""
		if u, err := url.Parse(raw); err == nil {
			if o, _, ok := originOf(u); ok {
				got = o
			}
		}
		if got != want {
			t.Errorf("originOf(%q) = %q, want %q", raw, got, want)
		}
	}
}
