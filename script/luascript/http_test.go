package luascript

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lexview/lexview/internal/netguard"
	"github.com/lexview/lexview/script"
)

// clientHost is a Host whose outbound client is given.
type clientHost struct {
	nopHost
	client *http.Client
}

func (h clientHost) HTTPClient() *http.Client { return h.client }

func runWithClient(t *testing.T, client *http.Client, src string, params map[string][]string) (string, error) {
	t.Helper()
	p, err := New(Options{}).Compile("http", src)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Run(context.Background(), &script.Invocation{Host: clientHost{client: client}, Kind: script.KindQuery, Params: params})
	return string(out), err
}

func TestHTTPGlobal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Echo-Method", r.Method)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"path": r.URL.Path, "auth": r.Header.Get("Authorization"), "ctype": r.Header.Get("Content-Type"), "body": string(body),
		})
	}))
	defer srv.Close()
	open := &http.Client{Transport: netguard.NewTransport(netguard.Options{AllowPrivate: true})}
	src := `function handle()
		local g = http.get(params.base .. "/a", {headers = {Authorization = "Bearer x"}})
		local p = http.post(params.base .. "/b", {hello = "world"})
		local r = http.request{method = "PATCH", url = params.base .. "/c", body = "raw"}
		return {
			get = {g.status, g.headers["x-echo-method"], json.decode(g.body).auth},
			post = {p.headers["x-echo-method"], json.decode(p.body).ctype, json.decode(p.body).body},
			patch = {r.headers["x-echo-method"], json.decode(r.body).body},
		}
	end`
	out, err := runWithClient(t, open, src, map[string][]string{"base": {srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"get":[200,"GET","Bearer x"],"patch":["PATCH","raw"],"post":["POST","application/json","{\"hello\":\"world\"}"]}`
	if out != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}

	// Through the guarded client, a private address is refused: the
	// script sees nil and an error, not the server.
	guarded := &http.Client{Transport: netguard.NewTransport(netguard.Options{})}
	out, err = runWithClient(t, guarded, `function handle()
		local res, err = http.get(params.base)
		return {res == nil, err}
	end`, map[string][]string{"base": {srv.URL}})
	if err != nil || !strings.HasPrefix(out, `[true,"`) {
		t.Fatalf("guarded request: %s %v", out, err)
	}

	// Only absolute http(s) URLs, and known methods.
	for _, src := range []string{
		`function handle() return http.get("file:///etc/passwd") end`,
		`function handle() return http.request{method = "CONNECT", url = "http://example.com"} end`,
	} {
		if _, err := runWithClient(t, open, src, nil); kindOf(err) != script.ErrRuntime {
			t.Errorf("%s: %v", src, err)
		}
	}
}

func TestHTTPBodyLimit(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(strings.Repeat("x", 6<<20)))
	}))
	defer srv.Close()
	open := &http.Client{Transport: netguard.NewTransport(netguard.Options{AllowPrivate: true})}
	out, err := runWithClient(t, open, `function handle() local r, err = http.get(params.base) return {r == nil, err} end`,
		map[string][]string{"base": {srv.URL}})
	if err != nil || !strings.Contains(out, "larger than") {
		t.Fatalf("%s %v", out, err)
	}
}
