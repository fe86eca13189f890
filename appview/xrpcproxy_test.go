package appview_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/internal/dnstest"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// echoService is a local XRPC service answering every call with what it
// received, under status 203 (to see statuses pass through), or 500 for
// com.example.svc.fail.
type echoService struct {
	srv   *httptest.Server
	calls atomic.Int64
}

func newEchoService(t *testing.T, name string) *echoService {
	e := &echoService{}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, ".fail") {
			w.WriteHeader(500)
			_, _ = w.Write([]byte(`{"error":"InternalServerError","message":"boom"}`))
			return
		}
		w.WriteHeader(203)
		_ = json.NewEncoder(w).Encode(map[string]any{
			"service": name, "method": r.Method, "path": r.URL.Path, "query": r.URL.RawQuery, "body": string(body),
			"content_type": r.Header.Get("Content-Type"), "authorization": r.Header.Get("Authorization"),
			"client_key": r.Header.Get("X-Client-Key"), "hop": r.Header.Get("X-Lexview-Proxied"),
		})
	}))
	t.Cleanup(e.srv.Close)
	return e
}

// TestXRPCProxy forwards calls for NSIDs without a local lexicon to the
// service of their authority (resolved through a loopback DNS server and
// the PLC stand-in) and checks the policy modes, the limits, loop
// protection and the refusals.
func TestXRPCProxy(t *testing.T) {
	t.Parallel()
	dns := dnstest.Start(t)
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		backend := t.Name()[strings.LastIndexByte(t.Name(), '/')+1:]
		pds, appviewSvc, other := newEchoService(t, "pds"), newEchoService(t, "appview"), newEchoService(t, "other")
		env := testenv.New(t, open(t), appview.Config{Network: appview.NetworkConfig{LexiconDNSServer: dns.Addr}})
		admin := env.Bootstrap(t)
		c, _ := env.NewClient(t, apiclients.NewClient{})
		call := func(method, path string, body any, headers ...string) testenv.Response {
			t.Helper()
			return env.Do(t, method, path, body, append([]string{"X-Client-Key", c.Key}, headers...)...)
		}
		// com.<backend>.svc.* → an authority on the PDS stand-in; the
		// appview one has an #atproto_appview service too.
		authority, withAppview := "did:plc:proxyauthority"+backend, "did:plc:proxyappview"+backend
		env.PLC.Register(authority, "authority.test", pds.srv.URL)
		env.PLC.Register(withAppview, "appview.test", pds.srv.URL)
		env.PLC.AddService(withAppview, "#atproto_appview", "AtprotoAppView", appviewSvc.srv.URL)
		env.PLC.Register("did:plc:other"+backend, "other.test", pds.srv.URL)
		env.PLC.AddService("did:plc:other"+backend, "#other_svc", "OtherService", other.srv.URL)
		env.PLC.Register("did:plc:self"+backend, "self.test", env.URL)
		dns.SetTXT("_lexicon.svc."+backend+".com", "did="+authority)
		dns.SetTXT("_lexicon.av."+backend+".com", "did="+withAppview)
		dns.SetTXT("_lexicon.self."+backend+".com", "did=did:plc:self"+backend)
		ns := "com." + backend + ".svc."

		// Forwarded: method, query, body and content type kept; the
		// caller's credentials are not passed on; the status comes back.
		r := call("GET", "/xrpc/"+ns+"getThing?a=1&b=two", nil, "Authorization", "Bearer secret")
		var echo map[string]any
		r.JSON(t, &echo)
		if r.Status != 203 || echo["service"] != "pds" || echo["method"] != "GET" || echo["path"] != "/xrpc/"+ns+"getThing" ||
			echo["query"] != "a=1&b=two" || echo["authorization"] != "" || echo["client_key"] != "" || echo["hop"] != "1" {
			t.Fatalf("forwarded GET: %d %s", r.Status, r.Raw)
		}
		r = call("POST", "/xrpc/"+ns+"doThing", map[string]any{"x": 1})
		r.JSON(t, &echo)
		if r.Status != 203 || echo["method"] != "POST" || echo["body"] != `{"x":1}` || echo["content_type"] != "application/json" {
			t.Fatalf("forwarded POST: %d %s", r.Status, r.Raw)
		}
		// An upstream error is passed back as it is.
		if r := call("GET", "/xrpc/"+ns+"fail", nil); r.Status != 500 || !strings.Contains(string(r.Raw), "boom") {
			t.Fatalf("upstream 500: %d %s", r.Status, r.Raw)
		}
		// The authority's #atproto_appview service is preferred to its PDS.
		if r := call("GET", "/xrpc/com."+backend+".av.get", nil); r.Status != 203 || !strings.Contains(string(r.Raw), `"service":"appview"`) {
			t.Fatalf("appview service: %d %s", r.Status, r.Raw)
		}
		// atproto-proxy names another service.
		if r := call("GET", "/xrpc/"+ns+"getThing", nil, "atproto-proxy", "did:plc:other"+backend+"#other_svc"); r.Status != 203 ||
			!strings.Contains(string(r.Raw), `"service":"other"`) {
			t.Fatalf("atproto-proxy: %d %s", r.Status, r.Raw)
		}
		if r := call("GET", "/xrpc/"+ns+"getThing", nil, "atproto-proxy", "did:plc:other"+backend+"#nothing"); r.Status != 404 {
			t.Fatalf("atproto-proxy to a missing service: %d %s", r.Status, r.Raw)
		}

		// Client identification and rate limits apply as for local methods.
		calls := pds.calls.Load()
		if r := env.Do(t, "GET", "/xrpc/"+ns+"getThing", nil); r.Status != 401 || pds.calls.Load() != calls {
			t.Fatalf("no client key: %d %s", r.Status, r.Raw)
		}
		// Bounded body.
		if r := call("POST", "/xrpc/"+ns+"doThing", map[string]any{"x": strings.Repeat("a", 2<<20)}); r.Status != 413 {
			t.Fatalf("oversized body: %d %s", r.Status, r.Raw)
		}
		// Unresolvable, loops: 404 method not found.
		expect(t, call("GET", "/xrpc/com.nowhere"+backend+".x.get", nil), 404, "method not found")
		expect(t, call("GET", "/xrpc/not-an-nsid", nil), 404, "method not found")
		expect(t, call("GET", "/xrpc/"+ns+"getThing", nil, "X-Lexview-Proxied", "1"), 404, "method not found")
		expect(t, call("GET", "/xrpc/com."+backend+".self.get", nil), 404, "method not found")
		var events struct {
			Events []map[string]any `json:"events"`
		}
		admin.Do(t, "GET", "/admin/events?event_type=xrpc.proxy_loop", nil).JSON(t, &events)
		if len(events.Events) != 1 || events.Events[0]["subject"] != "com."+backend+".self.get" {
			t.Fatalf("loop events: %v", events.Events)
		}
		// An unreachable service: an upstream failure (500).
		env.PLC.Register("did:plc:down"+backend, "down.test", "http://127.0.0.1:1")
		dns.SetTXT("_lexicon.down."+backend+".com", "did=did:plc:down"+backend)
		expect(t, call("GET", "/xrpc/com."+backend+".down.get", nil), 500, "the method's service failed")

		// A local lexicon is never forwarded.
		r = admin.Do(t, "POST", "/admin/lexicons", map[string]any{"lexicon_json": listSchema(ns + "local")})
		expect(t, r, 201, "")
		if r := call("GET", "/xrpc/"+ns+"local", nil); r.Status != 200 || strings.Contains(string(r.Raw), "service") {
			t.Fatalf("local method: %d %s", r.Status, r.Raw)
		}
		expect(t, call("POST", "/xrpc/"+ns+"local", map[string]any{}), 404, "method not found")

		// The policy.
		r = admin.Do(t, "GET", "/admin/settings/xrpc-proxy", nil)
		if r.Status != 200 || strings.TrimSpace(string(r.Raw)) != `{"mode":"open","patterns":[]}` {
			t.Fatalf("default policy: %d %s", r.Status, r.Raw)
		}
		for _, bad := range []map[string]any{
			{"mode": "sometimes"}, {}, {"mode": "allowlist", "patterns": []string{"*"}},
			{"mode": "allowlist", "patterns": []string{"com..x"}}, {"mode": "blocklist", "patterns": []string{"com.*"}},
			{"mode": "allowlist", "patterns": []string{"com.example.*.x"}},
		} {
			if r := admin.Do(t, "PUT", "/admin/settings/xrpc-proxy", bad); r.Status != 400 {
				t.Fatalf("policy %v: %d %s", bad, r.Status, r.Raw)
			}
		}
		reader := env.AddAdmin(t, admins.LexiconsRead)
		expect(t, reader.Do(t, "GET", "/admin/settings/xrpc-proxy", nil), 403, "")
		expect(t, reader.Do(t, "PUT", "/admin/settings/xrpc-proxy", map[string]any{"mode": "open"}), 403, "")
		// The reserved key is not a generic setting.
		expect(t, admin.Do(t, "PUT", "/admin/settings/xrpc-proxy", map[string]any{"value": "x"}), 400, "")

		forwarded := func(nsid string) bool {
			t.Helper()
			r := call("GET", "/xrpc/"+nsid, nil)
			switch {
			case r.Status == 203:
				return true
			case r.Status == 404 && r.Error(t) == "method not found":
				return false
			}
			t.Fatalf("%s: %d %s", nsid, r.Status, r.Raw)
			return false
		}
		for _, c := range []struct {
			mode     string
			patterns []string
			get, do  bool
		}{
			{"disabled", nil, false, false},
			{"allowlist", []string{ns + "getThing"}, true, false},
			{"allowlist", []string{"com." + backend + ".*"}, true, true},
			{"allowlist", []string{}, false, false},
			{"blocklist", []string{ns + "*"}, false, false},
			{"blocklist", []string{ns + "doThing", "org.other.*"}, true, false},
			{"open", nil, true, true},
		} {
			r := admin.Do(t, "PUT", "/admin/settings/xrpc-proxy", map[string]any{"mode": c.mode, "patterns": c.patterns})
			if r.Status != 200 || r.Object(t)["mode"] != c.mode {
				t.Fatalf("put %s %v: %d %s", c.mode, c.patterns, r.Status, r.Raw)
			}
			calls := pds.calls.Load()
			if get, do := forwarded(ns+"getThing"), forwarded(ns+"doThing"); get != c.get || do != c.do {
				t.Fatalf("%s %v: getThing forwarded %v, doThing %v; want %v, %v", c.mode, c.patterns, get, do, c.get, c.do)
			}
			want := int64(0)
			for _, f := range []bool{c.get, c.do} {
				if f {
					want++
				}
			}
			if got := pds.calls.Load() - calls; got != want {
				t.Fatalf("%s: %d calls reached the service, want %d", c.mode, got, want)
			}
		}
		if r := admin.Do(t, "GET", "/admin/settings/xrpc-proxy", nil); strings.TrimSpace(string(r.Raw)) != `{"mode":"open","patterns":[]}` {
			t.Fatalf("stored policy: %s", r.Raw)
		}
	})
}
