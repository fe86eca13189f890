package plugins

import (
	"strings"
	"testing"
)

func TestParseManifest(t *testing.T) {
	good := `{"id":"word-filter","name":"W","version":"1.0.0","api_version":1,"wasm":"w.wasm","allowed_hosts":["api.example.com","*.cdn.example.org"]}`
	m, err := ParseManifest([]byte(good))
	if err != nil || m.AuthType != AuthNone || m.RequiredSecrets == nil || len(m.AllowedHosts) != 2 {
		t.Fatalf("good: %+v %v", m, err)
	}
	for _, c := range []struct{ doc, msg string }{
		{`[]`, "not a JSON object of the expected shape"},
		{`{"id":"w"} {}`, "data after its JSON object"},
		{`{"id":"Bad_ID","name":"W","version":"1","api_version":1,"wasm":"w"}`, `id "Bad_ID" must be`},
		{`{"id":"w","version":"1","api_version":1,"wasm":"w"}`, "name is required"},
		{`{"id":"w","name":"W","api_version":1,"wasm":"w"}`, "version is required"},
		{`{"id":"w","name":"W","version":"1","wasm":"w"}`, "api_version 0 is not supported"},
		{`{"id":"w","name":"W","version":"1","api_version":1}`, "wasm (the module's path relative to the manifest) is required"},
		{`{"id":"w","name":"W","version":"1","api_version":1,"wasm":"w","auth_type":"saml"}`, `auth_type "saml" is not one of none, oauth2`},
		{`{"id":"w","name":"W","version":"1","api_version":1,"wasm":"w","required_secrets":[{"key":"a b"}]}`, `required_secrets[0].key "a b" is not a valid key`},
		{`{"id":"w","name":"W","version":"1","api_version":1,"wasm":"w","required_secrets":[{"key":"a"},{"key":"a"}]}`, `required_secrets[1].key "a" is repeated`},
		{`{"id":"w","name":"W","version":"1","api_version":1,"wasm":"w","allowed_hosts":["http://x"]}`, `allowed_hosts[0] "http://x" is not a hostname`},
		{`{"id":"w","name":"W","version":"1","api_version":1,"wasm":"w","config":[1]}`, "config must be a JSON object"},
	} {
		if _, err := ParseManifest([]byte(c.doc)); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %q", c.doc, err, c.msg)
		}
	}
}

func TestVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"1.10.0", "1.9.2", 1}, {"v1.2", "1.2.0", 0}, {"1.2.0-rc1", "1.2.0", -1}, {"2", "1.99", 1}, {"1.0.0-a", "1.0.0-b", -1},
	} {
		if got := compareVersions(c.a, c.b); (got > 0) != (c.want > 0) || (got < 0) != (c.want < 0) {
			t.Errorf("compare(%s, %s) = %d, want sign %d", c.a, c.b, got, c.want)
		}
	}
	l := Listing{ID: "p", LatestVersion: "1.3.0", Releases: []Release{{Version: "1.3.0"}, {Version: "1.0.0"}, {Version: "1.10.0-rc1"}, {Version: "1.2.0"}}}
	up, latest, pending := updateInfo("1.1.0", l, true)
	if !up || latest != "1.3.0" || strings.Join(pending, ",") != "1.2.0,1.3.0,1.10.0-rc1" {
		t.Fatalf("update info: %v %s %v", up, latest, pending)
	}
	if up, latest, pending := updateInfo("1.1.0", Listing{}, false); up || latest != "1.1.0" || len(pending) != 0 || pending == nil {
		t.Fatalf("unlisted: %v %s %v", up, latest, pending)
	}
}

func TestCheckAuthExports(t *testing.T) {
	all := func(string) bool { return true }
	noSync := func(name string) bool { return name != ExportSync }
	if err := checkAuthExports(Manifest{ID: "p", AuthType: AuthNone}, func(string) bool { return false }); err != nil {
		t.Fatalf("a library plugin needs no auth exports: %v", err)
	}
	if err := checkAuthExports(Manifest{ID: "p", AuthType: AuthOAuth2}, all); err != nil {
		t.Fatalf("all exports: %v", err)
	}
	err := checkAuthExports(Manifest{ID: "p", AuthType: AuthOAuth2}, noSync)
	if err == nil || !strings.Contains(err.Error(), "does not export lv_auth_sync") {
		t.Fatalf("missing lv_auth_sync: %v", err)
	}
}
