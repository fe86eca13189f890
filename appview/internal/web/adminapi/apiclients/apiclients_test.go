package apiclients_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

const (
	queryDoc = `{"lexicon":1,"id":"app.test.ping","defs":{"main":{"type":"query"}}}`
	procDoc  = `{"lexicon":1,"id":"app.test.write","defs":{"main":{"type":"procedure","input":{"encoding":"application/json"}}}}`
)

// newEnv starts an instance with a query and a procedure lexicon and
// bootstraps its super user.
func newEnv(t *testing.T, open func(testing.TB) storage.Store, cfg appview.Config) (*testenv.Env, *testenv.Admin) {
	t.Helper()
	env := testenv.New(t, open(t), cfg)
	for _, doc := range []string{queryDoc, procDoc} {
		if _, err := env.App.Lexicons().Put(context.Background(), lexicon.Upload{Document: json.RawMessage(doc)}); err != nil {
			t.Fatalf("put lexicon: %v", err)
		}
	}
	return env, env.Bootstrap(t)
}

var seq int

// body is a valid creation request; extra fields are merged in.
func body(extra map[string]any) map[string]any {
	seq++
	b := map[string]any{
		"name":          "My App",
		"client_id_url": "https://app" + strconv.Itoa(seq) + ".test/client-metadata.json",
		"client_uri":    "https://app.test",
		"redirect_uris": []string{"https://app.test/callback"},
	}
	for k, v := range extra {
		if v == nil {
			delete(b, k)
		} else {
			b[k] = v
		}
	}
	return b
}

// create makes a client through the admin API and returns its id and key.
func create(t *testing.T, su *testenv.Admin, extra map[string]any) (id, key string) {
	t.Helper()
	r := su.Do(t, "POST", "/admin/api-clients", body(extra))
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Raw)
	}
	o := r.Object(t)
	return o["id"].(string), o["client_key"].(string)
}

// ping calls the query with a client key in the X-Client-Key header.
func ping(t *testing.T, env *testenv.Env, key string, headers ...string) testenv.Response {
	t.Helper()
	return env.Do(t, "GET", "/xrpc/app.test.ping", nil, append([]string{"X-Client-Key", key}, headers...)...)
}

func expect(t *testing.T, r testenv.Response, status int, msg string) {
	t.Helper()
	if r.Status != status || (msg != "" && r.Error(t) != msg) {
		t.Fatalf("got %d %s, want %d %q", r.Status, r.Raw, status, msg)
	}
}

func TestCRUD(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env, su := newEnv(t, open, appview.Config{})

		r := su.Do(t, "POST", "/admin/api-clients", body(map[string]any{
			"name": "First", "client_id_url": "https://first.test/client-metadata.json",
			"rate_limit_capacity": 50, "rate_limit_refill_rate": 1.5,
		}))
		expect(t, r, 201, "")
		created := r.Object(t)
		id, key, secret := created["id"].(string), created["client_key"].(string), created["client_secret"].(string)
		if len(created) != 5 || id == "" || !strings.HasPrefix(key, "hvc_") || !strings.HasPrefix(secret, "hvs_") ||
			created["name"] != "First" || created["client_id_url"] != "https://first.test/client-metadata.json" {
			t.Fatalf("create response: %v", created)
		}
		// Usable on XRPC at once.
		expect(t, ping(t, env, key), 200, "")

		got := su.Do(t, "GET", "/admin/api-clients/"+id, nil)
		expect(t, got, 200, "")
		o := got.Object(t)
		want := map[string]any{
			"id": id, "client_key": key, "name": "First", "client_id_url": "https://first.test/client-metadata.json",
			"client_uri": "https://app.test", "redirect_uris": []any{"https://app.test/callback"}, "scopes": "atproto",
			"client_type": "confidential", "allowed_origins": []any{}, "rate_limit_capacity": float64(50),
			"rate_limit_refill_rate": 1.5, "is_active": true, "created_by": su.Account.DID.String(),
			"parent_client_id": nil, "owner_did": nil,
		}
		for k, v := range want {
			if gv, ok := o[k]; !ok || !jsonEqual(gv, v) {
				t.Errorf("%s = %#v (present %v), want %#v", k, gv, ok, v)
			}
		}
		for _, k := range []string{"created_at", "updated_at"} {
			if _, err := time.Parse(time.RFC3339, o[k].(string)); err != nil {
				t.Errorf("%s = %v", k, o[k])
			}
		}
		if len(o) != len(want)+2 || bytes.Contains(got.Raw, []byte(secret)) || bytes.Contains(got.Raw, []byte(apiclients.HashSecret(secret))) {
			t.Fatalf("unexpected fields or secret in %s", got.Raw)
		}
		expect(t, su.Do(t, "GET", "/admin/api-clients/nope", nil), 404, "API client not found")

		// A second client and a child of the first; the list is newest first.
		time.Sleep(5 * time.Millisecond)
		id2, _ := create(t, su, map[string]any{"name": "Second", "client_type": "public", "allowed_origins": []string{"https://web.app.test"}})
		time.Sleep(5 * time.Millisecond)
		child, _ := env.NewClient(t, apiclients.NewClient{ParentID: id, OwnerDID: "did:plc:owner"})
		var list []map[string]any
		r = su.Do(t, "GET", "/admin/api-clients", nil)
		r.JSON(t, &list)
		if len(list) != 3 || list[0]["id"] != child.ID || list[1]["id"] != id2 || list[2]["id"] != id {
			t.Fatalf("list order: %s", r.Raw)
		}
		if bytes.Contains(r.Raw, []byte("hvs_")) || bytes.Contains(r.Raw, []byte("secret")) {
			t.Fatalf("list reveals a secret: %s", r.Raw)
		}
		if list[1]["client_type"] != "public" || !jsonEqual(list[1]["allowed_origins"], []any{"https://web.app.test"}) {
			t.Fatalf("public client: %v", list[1])
		}
		su.Do(t, "GET", "/admin/api-clients?parent_id="+id, nil).JSON(t, &list)
		if len(list) != 1 || list[0]["id"] != child.ID || list[0]["parent_client_id"] != id || list[0]["owner_did"] != "did:plc:owner" {
			t.Fatalf("children: %v", list)
		}
		su.Do(t, "GET", "/admin/api-clients?parent_id="+id2, nil).JSON(t, &list)
		if list == nil || len(list) != 0 {
			t.Fatalf("no children: %v", list)
		}

		// Update every mutable field.
		before := o["updated_at"].(string)
		time.Sleep(5 * time.Millisecond)
		expect(t, su.Do(t, "PUT", "/admin/api-clients/"+id, map[string]any{
			"name": "Renamed", "client_uri": "https://new.test", "redirect_uris": []string{"https://new.test/cb", "https://new.test/cb2"},
			"scopes": "atproto transition:generic", "rate_limit_capacity": 7, "rate_limit_refill_rate": 0.5,
		}), 204, "")
		o = su.Do(t, "GET", "/admin/api-clients/"+id, nil).Object(t)
		if o["name"] != "Renamed" || o["client_uri"] != "https://new.test" || o["scopes"] != "atproto transition:generic" ||
			!jsonEqual(o["redirect_uris"], []any{"https://new.test/cb", "https://new.test/cb2"}) ||
			o["rate_limit_capacity"] != float64(7) || o["rate_limit_refill_rate"] != 0.5 || o["updated_at"] == before ||
			o["client_id_url"] != "https://first.test/client-metadata.json" || o["client_key"] != key {
			t.Fatalf("after update: %v", o)
		}
		// Absent fields are kept; null clears the limits.
		expect(t, su.Do(t, "PUT", "/admin/api-clients/"+id, []byte(`{"rate_limit_capacity":null,"rate_limit_refill_rate":null}`)), 204, "")
		o = su.Do(t, "GET", "/admin/api-clients/"+id, nil).Object(t)
		if o["rate_limit_capacity"] != nil || o["rate_limit_refill_rate"] != nil || o["name"] != "Renamed" {
			t.Fatalf("after clearing: %v", o)
		}
		expect(t, su.Do(t, "PUT", "/admin/api-clients/"+id, map[string]any{}), 204, "")
		expect(t, su.Do(t, "PUT", "/admin/api-clients/"+id2, map[string]any{"allowed_origins": []string{"https://a.test", "https://b.test"}}), 204, "")
		if o := su.Do(t, "GET", "/admin/api-clients/"+id2, nil).Object(t); !jsonEqual(o["allowed_origins"], []any{"https://a.test", "https://b.test"}) {
			t.Fatalf("origins: %v", o)
		}

		// Delete cascades to the child.
		expect(t, su.Do(t, "DELETE", "/admin/api-clients/"+id, nil), 204, "")
		expect(t, su.Do(t, "GET", "/admin/api-clients/"+id, nil), 404, "API client not found")
		expect(t, su.Do(t, "GET", "/admin/api-clients/"+child.ID, nil), 404, "API client not found")
		expect(t, su.Do(t, "DELETE", "/admin/api-clients/"+id, nil), 404, "API client not found")
		expect(t, su.Do(t, "PUT", "/admin/api-clients/"+id, map[string]any{"name": "x"}), 404, "API client not found")
		expect(t, ping(t, env, key), 401, "Invalid client")

		// Audit trail, without secrets.
		events, _, err := env.Store.ListEvents(t.Context(), storage.EventFilter{Category: "api_client", Limit: 20})
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, e := range events {
			types = append(types, e.Type)
			// The child was created through the library (App.Clients),
			// which audits with the creator it is given.
			actorOK := e.ActorDID == su.Account.DID.String() || e.Subject == child.ID && e.Type == "api_client.created"
			if !actorOK || bytes.Contains(e.Detail, []byte("hvs_")) || bytes.Contains(e.Detail, []byte("secret")) {
				t.Errorf("event %s: actor %q detail %s", e.Type, e.ActorDID, e.Detail)
			}
		}
		wantTypes := []string{"api_client.deleted", "api_client.updated", "api_client.updated", "api_client.updated",
			"api_client.updated", "api_client.created", "api_client.created", "api_client.created"}
		if !slices.Equal(types, wantTypes) {
			t.Fatalf("events %v, want %v", types, wantTypes)
		}
		if events[0].Subject != id || events[len(events)-1].Subject != id {
			t.Fatalf("event subjects: %q %q", events[0].Subject, events[len(events)-1].Subject)
		}
	})
}

func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func TestCreateRules(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		_, su := newEnv(t, open, appview.Config{})
		cases := []struct {
			name string
			body any
			msg  string
		}{
			{"malformed JSON", []byte(`{"name": `), "invalid request body"},
			{"not an object", []byte(`[]`), "invalid request body"},
			{"no name", body(map[string]any{"name": nil}), "invalid request body"},
			{"empty name", body(map[string]any{"name": ""}), "invalid request body"},
			{"no client_id_url", body(map[string]any{"client_id_url": nil}), "invalid request body"},
			{"no client_uri", body(map[string]any{"client_uri": nil}), "invalid request body"},
			{"no redirect_uris", body(map[string]any{"redirect_uris": nil}), "invalid request body"},
			{"redirect_uris not a list", body(map[string]any{"redirect_uris": "https://app.test/cb"}), "invalid request body"},
			{"fractional capacity", body(map[string]any{"rate_limit_capacity": 1.5}), "invalid request body"},
			{"string refill", body(map[string]any{"rate_limit_refill_rate": "fast"}), "invalid request body"},
			{"unknown type", body(map[string]any{"client_type": "spa"}), "Invalid client_type"},
			{"blank name", body(map[string]any{"name": "  "}), "name is required"},
			{"bad client_id_url", body(map[string]any{"client_id_url": "ftp://app.test/meta.json"}), "client_id_url must be an http(s) URL"},
			{"bad client_uri", body(map[string]any{"client_uri": "app.test"}), "client_uri must be an http(s) URL"},
			{"empty redirect_uris", body(map[string]any{"redirect_uris": []string{}}), "redirect_uris must list at least one URI"},
			{"bad redirect", body(map[string]any{"redirect_uris": []string{"callback"}}), `invalid redirect URI "callback"`},
			{"scopes without atproto", body(map[string]any{"scopes": "openid"}), "scopes must include atproto"},
			{"zero capacity", body(map[string]any{"rate_limit_capacity": 0}), "rate_limit_capacity must be at least 1"},
			{"huge capacity", body(map[string]any{"rate_limit_capacity": 1 << 40}), "rate_limit_capacity must be at most 2147483647"},
			{"negative refill", body(map[string]any{"rate_limit_refill_rate": -1}), "rate_limit_refill_rate must be positive"},
			{"origins on a confidential client", body(map[string]any{"allowed_origins": []string{"https://web.app.test"}}),
				"allowed_origins is only for public clients"},
			{"bad origin", body(map[string]any{"client_type": "public", "allowed_origins": []string{"https://web.app.test/path"}}),
				`invalid origin "https://web.app.test/path"`},
		}
		for _, c := range cases {
			r := su.Do(t, "POST", "/admin/api-clients", c.body)
			if r.Status != 400 || r.Error(t) != c.msg {
				t.Errorf("%s: %d %s, want 400 %q", c.name, r.Status, r.Raw, c.msg)
			}
		}

		b := body(map[string]any{"client_type": "public", "scopes": "atproto transition:generic"})
		expect(t, su.Do(t, "POST", "/admin/api-clients", b), 201, "")
		b["name"] = "Another name"
		expect(t, su.Do(t, "POST", "/admin/api-clients", b), 409, "client_id_url already registered")
		var list []map[string]any
		su.Do(t, "GET", "/admin/api-clients", nil).JSON(t, &list)
		if len(list) != 1 || list[0]["client_type"] != "public" || list[0]["scopes"] != "atproto transition:generic" ||
			list[0]["rate_limit_capacity"] != nil || list[0]["rate_limit_refill_rate"] != nil {
			t.Fatalf("list: %v", list)
		}
	})
}

func TestUpdateRules(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		_, su := newEnv(t, open, appview.Config{})
		id, _ := create(t, su, nil)
		path := "/admin/api-clients/" + id
		cases := []struct {
			name string
			body any
			msg  string
		}{
			{"client_id_url", map[string]any{"client_id_url": "https://elsewhere.test/meta.json"}, "client_id_url cannot be changed"},
			{"null client_id_url", []byte(`{"client_id_url":null}`), "client_id_url cannot be changed"},
			{"client_type", map[string]any{"client_type": "public"}, "client_type cannot be changed"},
			{"client_type not a string", map[string]any{"client_type": 1}, "invalid request body"},
			{"malformed JSON", []byte(`{"name":`), "invalid request body"},
			{"null name", []byte(`{"name":null}`), "invalid request body"},
			{"null is_active", []byte(`{"is_active":null}`), "invalid request body"},
			{"string is_active", map[string]any{"is_active": "no"}, "invalid request body"},
			{"fractional capacity", map[string]any{"rate_limit_capacity": 2.5}, "invalid request body"},
			{"string refill", map[string]any{"rate_limit_refill_rate": "1"}, "invalid request body"},
			{"redirect_uris not a list", map[string]any{"redirect_uris": "https://x.test"}, "invalid request body"},
			{"zero capacity", map[string]any{"rate_limit_capacity": 0}, "rate_limit_capacity must be at least 1"},
			{"zero refill", map[string]any{"rate_limit_refill_rate": 0}, "rate_limit_refill_rate must be positive"},
			{"empty name", map[string]any{"name": ""}, "name is required"},
			{"bad client_uri", map[string]any{"client_uri": "nope"}, "client_uri must be an http(s) URL"},
			{"no redirect", map[string]any{"redirect_uris": []string{}}, "redirect_uris must list at least one URI"},
			{"scopes", map[string]any{"scopes": ""}, "scopes must include atproto"},
			{"origins on a confidential client", map[string]any{"allowed_origins": []string{"https://web.test"}},
				"allowed_origins is only for public clients"},
		}
		before := su.Do(t, "GET", path, nil).Raw
		for _, c := range cases {
			r := su.Do(t, "PUT", path, c.body)
			if r.Status != 400 || r.Error(t) != c.msg {
				t.Errorf("%s: %d %s, want 400 %q", c.name, r.Status, r.Raw, c.msg)
			}
		}
		if after := su.Do(t, "GET", path, nil).Raw; !bytes.Equal(before, after) {
			t.Fatalf("a refused update changed the client:\n%s\n%s", before, after)
		}
		// The unchanged type may be sent back.
		expect(t, su.Do(t, "PUT", path, map[string]any{"client_type": "confidential", "name": "Same type"}), 204, "")
		expect(t, su.Do(t, "PUT", "/admin/api-clients/missing", map[string]any{"name": "x"}), 404, "API client not found")
	})
}

func TestActivation(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env, su := newEnv(t, open, appview.Config{})
		id, key := create(t, su, nil)
		path := "/admin/api-clients/" + id
		expect(t, ping(t, env, key), 200, "")

		expect(t, su.Do(t, "PUT", path, map[string]any{"is_active": false}), 204, "")
		expect(t, ping(t, env, key), 401, "Invalid client")
		if o := su.Do(t, "GET", path, nil).Object(t); o["is_active"] != false {
			t.Fatalf("is_active: %v", o["is_active"])
		}
		expect(t, su.Do(t, "PUT", path, map[string]any{"is_active": true}), 204, "")
		expect(t, ping(t, env, key), 200, "")

		// Deactivating a parent deactivates its child.
		child, _, err := env.App.Clients().Create(context.Background(), appview.NewClient{
			Name: "child", ClientIDURL: "https://child.test/meta.json", ClientURI: "https://child.test",
			RedirectURIs: []string{"https://child.test/cb"}, CreatedBy: "did:plc:owner", ParentID: id, OwnerDID: "did:plc:owner",
		})
		if err != nil {
			t.Fatal(err)
		}
		expect(t, ping(t, env, child.Key), 200, "")
		expect(t, su.Do(t, "PUT", path, map[string]any{"is_active": false}), 204, "")
		expect(t, ping(t, env, child.Key), 401, "Invalid client")
		expect(t, ping(t, env, key), 401, "Invalid client")
		if o := su.Do(t, "GET", "/admin/api-clients/"+child.ID, nil).Object(t); o["is_active"] != false {
			t.Fatalf("child is_active: %v", o["is_active"])
		}
		expect(t, su.Do(t, "PUT", path, map[string]any{"is_active": true}), 204, "")
		expect(t, ping(t, env, key), 200, "")
		expect(t, su.Do(t, "PUT", "/admin/api-clients/"+child.ID, map[string]any{"is_active": true}), 204, "")
		expect(t, ping(t, env, child.Key), 200, "")

		// Deleting the parent deletes the child.
		expect(t, su.Do(t, "DELETE", path, nil), 204, "")
		expect(t, ping(t, env, child.Key), 401, "Invalid client")
		expect(t, ping(t, env, key), 401, "Invalid client")
	})
}

func TestIdentification(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		logs := &testenv.LogBuffer{}
		env, su := newEnv(t, open, appview.Config{Logger: slog.New(slog.NewTextHandler(logs, nil))})
		r := su.Do(t, "POST", "/admin/api-clients", body(map[string]any{"client_uri": "https://home.app.test/about"}))
		expect(t, r, 201, "")
		key, secret := r.Object(t)["client_key"].(string), r.Object(t)["client_secret"].(string)
		_, other := create(t, su, nil)

		expect(t, env.Do(t, "GET", "/xrpc/app.test.ping", nil), 401, "Missing client identification")
		expect(t, env.Do(t, "GET", "/xrpc/app.test.ping", nil, "X-Client-Key", ""), 401, "Missing client identification")
		expect(t, env.Do(t, "GET", "/xrpc/app.test.ping?client_key=", nil), 401, "Missing client identification")
		expect(t, env.Do(t, "POST", "/xrpc/app.test.write", map[string]any{}), 401, "Missing client identification")
		expect(t, ping(t, env, "hvc_unknown"), 401, "Invalid client")
		expect(t, ping(t, env, key), 200, "")
		expect(t, env.Do(t, "GET", "/xrpc/app.test.ping?client_key="+key, nil), 200, "")
		expect(t, env.Do(t, "GET", "/xrpc/app.test.ping?client_key=hvc_unknown", nil), 401, "Invalid client")
		// The header comes first.
		expect(t, env.Do(t, "GET", "/xrpc/app.test.ping?client_key=hvc_unknown", nil, "X-Client-Key", key), 200, "")
		expect(t, env.Do(t, "GET", "/xrpc/app.test.ping?client_key="+key, nil, "X-Client-Key", "hvc_unknown"), 401, "Invalid client")

		// Matching credentials log nothing.
		logs.Take()
		expect(t, ping(t, env, key, "Origin", "https://home.app.test"), 200, "")
		expect(t, ping(t, env, key, "X-Client-Secret", secret), 200, "")
		if s := logs.Take(); strings.Contains(s, "mismatch") {
			t.Fatalf("matching credentials logged a warning: %s", s)
		}
		// Mismatches are logged, not refused.
		expect(t, ping(t, env, key, "Origin", "https://evil.test"), 200, "")
		if s := logs.Take(); !strings.Contains(s, "level=WARN") || !strings.Contains(s, "API client origin mismatch") ||
			!strings.Contains(s, "https://evil.test") {
			t.Fatalf("origin mismatch log: %q", s)
		}
		wrong := "hvs_definitely-not-the-secret"
		expect(t, ping(t, env, key, "X-Client-Secret", wrong), 200, "")
		s := logs.Take()
		if !strings.Contains(s, "level=WARN") || !strings.Contains(s, "API client secret mismatch") {
			t.Fatalf("secret mismatch log: %q", s)
		}
		if strings.Contains(s, wrong) || strings.Contains(s, secret) || strings.Contains(s, "hvs_") {
			t.Fatalf("the log reveals a secret: %q", s)
		}
		// Another client's secret is a mismatch too.
		expect(t, ping(t, env, other, "X-Client-Secret", secret), 200, "")
		if s := logs.Take(); !strings.Contains(s, "API client secret mismatch") || strings.Contains(s, secret) {
			t.Fatalf("cross-client secret log: %q", s)
		}
	})
}

// expectLimited checks a 429 answer and its Retry-After header.
func expectLimited(t *testing.T, r testenv.Response) {
	t.Helper()
	if r.Status != 429 || string(r.Raw) != `{"error":"rate limit exceeded"}` {
		t.Fatalf("want 429 rate limit exceeded, got %d %s", r.Status, r.Raw)
	}
	secs, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if err != nil || secs < 1 {
		t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
	}
}

func TestRateLimits(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env, su := newEnv(t, open, appview.Config{Clients: appview.ClientConfig{DefaultRateLimitCapacity: 4, DefaultRateLimitRefillRate: 0.001}})
		limited := map[string]any{"rate_limit_capacity": 3, "rate_limit_refill_rate": 0.001}
		id, key := create(t, su, limited)
		_, other := create(t, su, limited)
		for i := range 3 {
			if r := ping(t, env, key); r.Status != 200 {
				t.Fatalf("call %d: %d %s", i+1, r.Status, r.Raw)
			}
		}
		r := ping(t, env, key)
		expectLimited(t, r)
		if secs, _ := strconv.Atoi(r.Header.Get("Retry-After")); secs < 900 {
			t.Fatalf("Retry-After %d: one token takes about 1000s at 0.001/s", secs)
		}
		// The query parameter draws from the same bucket; other clients have
		// their own.
		expectLimited(t, env.Do(t, "GET", "/xrpc/app.test.ping?client_key="+key, nil))
		expect(t, ping(t, env, other), 200, "")

		// A faster refill applies at once: the bucket keeps its level (empty)
		// and refills at the new rate from the edit on (a token every
		// microsecond), not only from the first request after it.
		expect(t, su.Do(t, "PUT", "/admin/api-clients/"+id, map[string]any{"rate_limit_refill_rate": 1e6}), 204, "")
		time.Sleep(time.Millisecond)
		expect(t, ping(t, env, key), 200, "")

		// A lower capacity applies at once; clearing it brings the default.
		expect(t, su.Do(t, "PUT", "/admin/api-clients/"+id, map[string]any{"rate_limit_capacity": 100, "rate_limit_refill_rate": 0.001}), 204, "")
		expect(t, su.Do(t, "PUT", "/admin/api-clients/"+id, map[string]any{"rate_limit_capacity": 2}), 204, "")
		expect(t, ping(t, env, key), 200, "")
		expect(t, ping(t, env, key), 200, "")
		expectLimited(t, ping(t, env, key))

		id3, key3 := create(t, su, map[string]any{"rate_limit_capacity": 100, "rate_limit_refill_rate": 0.001})
		expect(t, ping(t, env, key3), 200, "")
		expect(t, su.Do(t, "PUT", "/admin/api-clients/"+id3, []byte(`{"rate_limit_capacity":null}`)), 204, "")
		for i := range 4 {
			if r := ping(t, env, key3); r.Status != 200 {
				t.Fatalf("default capacity, call %d: %d %s", i+1, r.Status, r.Raw)
			}
		}
		expectLimited(t, ping(t, env, key3))

		// A child client has its own bucket with the defaults.
		child, _, err := env.App.Clients().Create(context.Background(), appview.NewClient{
			Name: "child", ClientIDURL: "https://child.test/meta.json", ClientURI: "https://child.test",
			RedirectURIs: []string{"https://child.test/cb"}, CreatedBy: "did:plc:owner", ParentID: id3, OwnerDID: "did:plc:owner",
		})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			if r := ping(t, env, child.Key); r.Status != 200 {
				t.Fatalf("child call %d: %d %s", i+1, r.Status, r.Raw)
			}
		}
		expectLimited(t, ping(t, env, child.Key))

		// Procedures with only a client key are limited before being refused.
		_, pkey := create(t, su, limited)
		for i := range 3 {
			if r := env.Do(t, "POST", "/xrpc/app.test.write", map[string]any{"text": "hi"}, "X-Client-Key", pkey); r.Status != 401 {
				t.Fatalf("procedure call %d: %d %s", i+1, r.Status, r.Raw)
			}
		}
		expectLimited(t, env.Do(t, "POST", "/xrpc/app.test.write", map[string]any{"text": "hi"}, "X-Client-Key", pkey))

		// A deleted client's key is refused, not limited.
		expect(t, su.Do(t, "DELETE", "/admin/api-clients/"+id, nil), 204, "")
		expect(t, ping(t, env, key), 401, "Invalid client")
	})
}
