package thirdparty_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/internal/oauthtest"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

const (
	listPath   = "/xrpc/dev.service.listApiClients"
	getPath    = "/xrpc/dev.service.getApiClient"
	createPath = "/xrpc/dev.service.createApiClient"
	deletePath = "/xrpc/dev.service.deleteApiClient"
	pingDoc    = `{"lexicon":1,"id":"app.test.ping","defs":{"main":{"type":"query"}}}`
)

// fixture is an instance with a top-level (parent) client and alice
// signed in to it on one device.
type fixture struct {
	env    *testenv.Env
	pds    *oauthtest.Server
	parent storage.APIClient
	secret string
	alice  *testenv.Device
}

func setup(t *testing.T, open func(testing.TB) storage.Store, cfg appview.Config) *fixture {
	t.Helper()
	env := testenv.New(t, open(t), cfg)
	if _, err := env.App.Lexicons().Put(context.Background(), lexicon.Upload{Document: json.RawMessage(pingDoc)}); err != nil {
		t.Fatal(err)
	}
	f := &fixture{env: env, pds: oauthtest.New(t, oauthtest.Options{})}
	f.parent, f.secret = env.NewClient(t, apiclients.NewClient{Name: "parent app", Scopes: "atproto transition:generic"})
	f.alice = f.user(t, f.parent, f.secret)
	return f
}

// user signs a new account in to the confidential client c.
func (f *fixture) user(t *testing.T, c storage.APIClient, secret string) *testenv.Device {
	t.Helper()
	did := f.env.PLC.NewAccount(t, false, f.pds.URL).DID.String()
	return f.env.SignIn(t, f.pds, testenv.AppClient{Key: c.Key, Secret: secret}, did)
}

// newClientBody is a valid createApiClient body with a fresh clientIdUrl,
// with changes applied (a nil value removes the field).
func newClientBody(changes map[string]any) map[string]any {
	b := map[string]any{
		"name": "my app", "clientIdUrl": "https://my.app.test/" + storage.NewID() + "/client-metadata.json",
		"clientUri": "https://my.app.test", "redirectUris": []string{"https://my.app.test/callback"},
	}
	for k, v := range changes {
		if v == nil {
			delete(b, k)
		} else {
			b[k] = v
		}
	}
	return b
}

// created is a createApiClient answer.
type created struct {
	Client struct {
		ID             string   `json:"id"`
		ClientKey      string   `json:"clientKey"`
		Name           string   `json:"name"`
		ClientIDURL    string   `json:"clientIdUrl"`
		ClientURI      string   `json:"clientUri"`
		RedirectURIs   []string `json:"redirectUris"`
		ClientType     string   `json:"clientType"`
		Scopes         string   `json:"scopes"`
		AllowedOrigins []string `json:"allowedOrigins"`
		IsActive       bool     `json:"isActive"`
		CreatedAt      string   `json:"createdAt"`
	} `json:"client"`
	ClientSecret string `json:"clientSecret"`
}

// create makes a client as d, failing the test unless it answers 201.
func create(t *testing.T, d *testenv.Device, changes map[string]any) (created, testenv.Response) {
	t.Helper()
	r := d.Call(t, "POST", createPath, newClientBody(changes))
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Raw)
	}
	var out created
	r.JSON(t, &out)
	return out, r
}

func expectError(t *testing.T, r testenv.Response, status int, msg string) {
	t.Helper()
	if r.Status != status || r.Error(t) != msg {
		t.Fatalf("got %d %s, want %d %q", r.Status, r.Raw, status, msg)
	}
}

// listIDs lists d's clients and returns their ids in order.
func listIDs(t *testing.T, d *testenv.Device) []string {
	t.Helper()
	r := d.Call(t, "GET", listPath, nil)
	if r.Status != 200 {
		t.Fatalf("list: %d %s", r.Status, r.Raw)
	}
	var out struct {
		Clients []map[string]any `json:"clients"`
	}
	r.JSON(t, &out)
	if out.Clients == nil {
		t.Fatalf("list without a clients array: %s", r.Raw)
	}
	ids := []string{}
	for _, c := range out.Clients {
		ids = append(ids, c["id"].(string))
	}
	return ids
}

// endpoint is one of the four methods with a body that would succeed.
type endpoint struct {
	method, path string
	body         any
}

func endpoints() []endpoint {
	return []endpoint{
		{"GET", listPath, nil},
		{"GET", getPath + "?id=" + storage.NewID(), nil},
		{"POST", createPath, newClientBody(nil)},
		{"POST", deletePath, map[string]any{"id": storage.NewID()}},
	}
}

// TestAuthentication checks the refusals of every endpoint, in the
// specification's order and with its exact strings.
func TestAuthentication(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		f := setup(t, open, appview.Config{})
		a := f.alice
		key := f.parent.Key
		for _, ep := range endpoints() {
			do := func(headers ...string) testenv.Response {
				return f.env.Do(t, ep.method, ep.path, ep.body, headers...)
			}
			proof := func() string { return a.Proof(t, ep.method, ep.path) }
			dpop := "DPoP " + a.AccessToken

			// Authorization missing or not DPoP.
			expectError(t, do(), 401, "requires DPoP authentication")
			expectError(t, do("X-Client-Key", key), 401, "requires DPoP authentication")
			expectError(t, do("X-Client-Key", key, "X-Client-Secret", f.secret), 401, "requires DPoP authentication")
			expectError(t, do("X-Client-Key", key, "Authorization", "Bearer "+a.AccessToken, "DPoP", proof()), 401, "requires DPoP authentication")
			expectError(t, do("X-Client-Key", key, "Authorization", "DPoP", "DPoP", proof()), 401, "requires DPoP authentication")
			// No client key, an unknown one.
			expectError(t, do("Authorization", dpop, "DPoP", proof()), 401, "requires an API client key")
			expectError(t, do("X-Client-Key", "hvc_unknown", "Authorization", dpop, "DPoP", proof()), 401, "Invalid client")
			// DPoP failures: no proof, a proof for another URL or method, a replay.
			for _, r := range []testenv.Response{
				do("X-Client-Key", key, "Authorization", dpop),
				do("X-Client-Key", key, "Authorization", dpop, "DPoP", a.Proof(t, ep.method, "/xrpc/app.test.other")),
				do("X-Client-Key", key, "Authorization", dpop, "DPoP", a.Proof(t, "PUT", ep.path)),
				do("X-Client-Key", key, "Authorization", "DPoP wrong-token", "DPoP", proof()),
			} {
				if r.Status != 401 {
					t.Fatalf("%s %s with a bad DPoP proof: %d %s", ep.method, ep.path, r.Status, r.Raw)
				}
			}
			p := proof()
			first := do("X-Client-Key", key, "Authorization", dpop, "DPoP", p)
			if first.Status == 401 {
				t.Fatalf("%s %s: %d %s", ep.method, ep.path, first.Status, first.Raw)
			}
			if r := do("X-Client-Key", key, "Authorization", dpop, "DPoP", p); r.Status != 401 {
				t.Fatalf("%s %s with a replayed proof: %d %s", ep.method, ep.path, r.Status, r.Raw)
			}
		}

		// A session of another client does not authenticate with this
		// client's key.
		other, otherSecret := f.env.NewClient(t, apiclients.NewClient{})
		stranger := f.user(t, other, otherSecret)
		if r := stranger.Call(t, "GET", listPath, nil, "X-Client-Key", key); r.Status != 401 {
			t.Fatalf("session of another client: %d %s", r.Status, r.Raw)
		}

		// A child client, signed in with a session of its own, manages
		// nothing: 401 for list, get and delete, 403 for create.
		child, _ := create(t, a, nil)
		childRow, err := f.env.Store.GetAPIClient(context.Background(), child.Client.ID)
		if err != nil {
			t.Fatal(err)
		}
		kid := f.user(t, childRow, child.ClientSecret)
		for _, ep := range endpoints() {
			want, msg := 401, "child clients cannot manage API clients"
			if ep.path == createPath {
				want, msg = 403, "Child clients cannot create API clients"
			}
			expectError(t, kid.Call(t, ep.method, ep.path, ep.body), want, msg)
		}
		expectError(t, kid.Call(t, "POST", deletePath, map[string]any{"id": child.Client.ID}), 401, "child clients cannot manage API clients")

		// A deactivated parent is an invalid client.
		f.parent.IsActive = false
		if _, err := f.env.App.Clients().Update(context.Background(), "", f.parent.ID, appview.FullClientPatch(f.parent)); err != nil {
			t.Fatal(err)
		}
		expectError(t, a.Call(t, "GET", listPath, nil), 401, "Invalid client")
	})
}

// TestManageClients covers create, list, get and delete, ownership and
// validation.
func TestManageClients(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		f := setup(t, open, appview.Config{})
		ctx := context.Background()
		a := f.alice
		if ids := listIDs(t, a); len(ids) != 0 {
			t.Fatalf("list before any client: %v", ids)
		}

		// A confidential client: the camelCase shape and a secret.
		conf, r := create(t, a, map[string]any{"clientType": "confidential"})
		var raw struct {
			Client map[string]any `json:"client"`
		}
		r.JSON(t, &raw)
		fields := slices.Sorted(maps.Keys(raw.Client))
		want := []string{"allowedOrigins", "clientIdUrl", "clientKey", "clientType", "clientUri", "createdAt", "id", "isActive", "name", "redirectUris", "scopes"}
		if !slices.Equal(fields, want) || len(r.Object(t)) != 2 {
			t.Fatalf("create answer fields: %v in %s", fields, r.Raw)
		}
		c := conf.Client
		if !strings.HasPrefix(conf.ClientSecret, "hvs_") || !strings.HasPrefix(c.ClientKey, "hvc_") || c.ClientType != "confidential" ||
			c.Scopes != "atproto" || !c.IsActive || c.Name != "my app" || c.ClientURI != "https://my.app.test" ||
			!slices.Equal(c.RedirectURIs, []string{"https://my.app.test/callback"}) || c.AllowedOrigins == nil || c.CreatedAt == "" {
			t.Fatalf("confidential client: %s", r.Raw)
		}
		row, err := f.env.Store.GetAPIClient(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if row.ParentID != f.parent.ID || row.OwnerDID != a.DID || row.CreatedBy != a.DID ||
			row.RateLimitCapacity != nil || row.RateLimitRefillRate != nil || row.SecretHash != apiclients.HashSecret(conf.ClientSecret) {
			t.Fatalf("stored child: %+v", row)
		}

		// A public client: no secret in the answer; scopes kept as given.
		pub, r := create(t, a, map[string]any{"clientType": "public", "allowedOrigins": []string{"https://web.my.app.test"},
			"scopes": "atproto transition:generic"})
		if _, has := r.Object(t)["clientSecret"]; has || pub.Client.ClientType != "public" ||
			pub.Client.Scopes != "atproto transition:generic" || !slices.Equal(pub.Client.AllowedOrigins, []string{"https://web.my.app.test"}) {
			t.Fatalf("public client: %s", r.Raw)
		}

		// List (newest first) and get.
		if ids := listIDs(t, a); !slices.Equal(ids, []string{pub.Client.ID, c.ID}) {
			t.Fatalf("list: %v", ids)
		}
		r = a.Call(t, "GET", getPath+"?id="+c.ID, nil)
		var got created
		r.JSON(t, &got)
		if r.Status != 200 || got.Client.ID != c.ID || got.Client.ClientKey != c.ClientKey || got.ClientSecret != "" ||
			strings.Contains(string(r.Raw), "ecret") {
			t.Fatalf("get: %d %s", r.Status, r.Raw)
		}

		// Another user of the same parent, and a user of another parent,
		// see none of alice's clients.
		bob := f.user(t, f.parent, f.secret)
		other, otherSecret := f.env.NewClient(t, apiclients.NewClient{})
		carol := f.user(t, other, otherSecret)
		bobs, _ := create(t, bob, nil)
		for _, u := range []*testenv.Device{bob, carol} {
			ids := listIDs(t, u)
			if slices.Contains(ids, c.ID) || slices.Contains(ids, pub.Client.ID) {
				t.Fatalf("another user lists alice's clients: %v", ids)
			}
			expectError(t, u.Call(t, "GET", getPath+"?id="+c.ID, nil), 404, "API client not found")
			expectError(t, u.Call(t, "POST", deletePath, map[string]any{"id": c.ID}), 404, "API client not found")
		}
		if ids := listIDs(t, bob); !slices.Equal(ids, []string{bobs.Client.ID}) {
			t.Fatalf("bob's list: %v", ids)
		}
		// Neither the parent itself nor an unknown id is alice's.
		for _, id := range []string{f.parent.ID, other.ID, storage.NewID(), "not-a-uuid"} {
			expectError(t, a.Call(t, "GET", getPath+"?id="+id, nil), 404, "API client not found")
			expectError(t, a.Call(t, "POST", deletePath, map[string]any{"id": id}), 404, "API client not found")
		}
		expectError(t, a.Call(t, "GET", getPath, nil), 400, "invalid request body")
		expectError(t, a.Call(t, "GET", getPath+"?id=", nil), 400, "invalid request body")

		// Validation.
		for name, body := range map[string]any{
			"no name":            newClientBody(map[string]any{"name": nil}),
			"empty name":         newClientBody(map[string]any{"name": ""}),
			"no clientIdUrl":     newClientBody(map[string]any{"clientIdUrl": nil}),
			"no clientUri":       newClientBody(map[string]any{"clientUri": nil}),
			"no redirectUris":    newClientBody(map[string]any{"redirectUris": nil}),
			"empty redirectUris": newClientBody(map[string]any{"redirectUris": []string{}}),
			"redirectUris str":   newClientBody(map[string]any{"redirectUris": "https://my.app.test/cb"}),
			"name number":        newClientBody(map[string]any{"name": 5}),
			"malformed":          []byte(`{"name":`),
			"array":              []byte(`[]`),
			"trailing":           []byte(`{} {}`),
			"null":               []byte(`null`),
		} {
			r := a.Call(t, "POST", createPath, body)
			if r.Status != 400 || r.Error(t) != "invalid request body" {
				t.Fatalf("%s: %d %s", name, r.Status, r.Raw)
			}
		}
		expectError(t, a.Call(t, "POST", createPath, newClientBody(map[string]any{"clientType": "weird"})), 400, "Invalid client_type")
		if r := a.Call(t, "POST", createPath, newClientBody(map[string]any{"clientUri": "ftp://x"})); r.Status != 400 {
			t.Fatalf("bad clientUri: %d %s", r.Status, r.Raw)
		}
		if r := a.Call(t, "POST", createPath, newClientBody(map[string]any{"scopes": "transition:generic"})); r.Status != 400 {
			t.Fatalf("scopes without atproto: %d %s", r.Status, r.Raw)
		}
		// A child gets no scope its parent lacks.
		expectError(t, a.Call(t, "POST", createPath, newClientBody(map[string]any{"scopes": "atproto transition:chat.bsky"})),
			400, "scope transition:chat.bsky is not granted to the parent client")
		big := []byte(`{"name":"` + strings.Repeat("x", 70<<10) + `"}`)
		expectError(t, a.Call(t, "POST", createPath, big), 413, "request body too large")
		// clientIdUrl is unique across the instance.
		for _, dup := range []string{c.ClientIDURL, f.parent.ClientIDURL, bobs.Client.ClientIDURL} {
			expectError(t, a.Call(t, "POST", createPath, newClientBody(map[string]any{"clientIdUrl": dup})), 409, "client_id_url already registered")
		}

		// Delete: the child's sessions go with it, and its key stops
		// working.
		childRow, _ := f.env.Store.GetAPIClient(ctx, c.ID)
		device := f.user(t, childRow, conf.ClientSecret)
		if r := f.env.Do(t, "GET", "/xrpc/app.test.ping", nil, "X-Client-Key", c.ClientKey); r.Status != 200 {
			t.Fatalf("child key before delete: %d %s", r.Status, r.Raw)
		}
		expectError(t, a.Call(t, "POST", deletePath, map[string]any{}), 400, "invalid request body")
		expectError(t, a.Call(t, "POST", deletePath, []byte(`{`)), 400, "invalid request body")
		r = a.Call(t, "POST", deletePath, map[string]any{"id": c.ID})
		if r.Status != 200 || strings.TrimSpace(string(r.Raw)) != "{}" {
			t.Fatalf("delete: %d %s", r.Status, r.Raw)
		}
		expectError(t, a.Call(t, "GET", getPath+"?id="+c.ID, nil), 404, "API client not found")
		expectError(t, a.Call(t, "POST", deletePath, map[string]any{"id": c.ID}), 404, "API client not found")
		if ids := listIDs(t, a); !slices.Equal(ids, []string{pub.Client.ID}) {
			t.Fatalf("list after delete: %v", ids)
		}
		if sessions, err := f.env.Store.ListDeviceSessions(ctx, c.ID, device.DID); err != nil || len(sessions) != 0 {
			t.Fatalf("sessions of the deleted client: %v %v", sessions, err)
		}
		expectError(t, f.env.Do(t, "GET", "/xrpc/app.test.ping", nil, "X-Client-Key", c.ClientKey), 401, "Invalid client")

		// Events: created and deleted, with the owner as actor.
		for _, tc := range []struct{ typ, subject, actor string }{
			{"api_client.created", c.ID, a.DID},
			{"api_client.created", pub.Client.ID, a.DID},
			{"api_client.created", bobs.Client.ID, bob.DID},
			{"api_client.deleted", c.ID, a.DID},
		} {
			events, _, err := f.env.Store.ListEvents(ctx, storage.EventFilter{Type: tc.typ, Subject: tc.subject, Limit: 10})
			if err != nil || len(events) != 1 || events[0].ActorDID != tc.actor {
				t.Fatalf("%s %s: %+v %v", tc.typ, tc.subject, events, err)
			}
			var detail map[string]any
			if json.Unmarshal(events[0].Detail, &detail) != nil || detail["parent_client_id"] == nil {
				t.Fatalf("%s detail: %s", tc.typ, events[0].Detail)
			}
		}
	})
}

// TestOwnedClientsAreBounded: one user owns at most MaxOwnedClients under
// one client; deleting one makes room again.
func TestOwnedClientsAreBounded(t *testing.T) {
	f := setup(t, func(t testing.TB) storage.Store { return storagetest.SQLite(t) }, appview.Config{})
	a := f.alice
	var last created
	for i := range apiclients.MaxOwnedClients {
		last, _ = create(t, a, map[string]any{"clientIdUrl": fmt.Sprintf("https://my.app.test/client-%d.json", i)})
	}
	expectError(t, a.Call(t, "POST", createPath, newClientBody(map[string]any{"clientIdUrl": "https://my.app.test/one-more.json"})),
		400, fmt.Sprintf("a user may own at most %d API clients under one client", apiclients.MaxOwnedClients))
	// Another user of the same client is not affected.
	bob := f.user(t, f.parent, f.secret)
	create(t, bob, map[string]any{"clientIdUrl": "https://my.app.test/bob.json"})
	if r := a.Call(t, "POST", deletePath, map[string]any{"id": last.Client.ID}); r.Status != 200 {
		t.Fatalf("delete: %d %s", r.Status, r.Raw)
	}
	create(t, a, map[string]any{"clientIdUrl": "https://my.app.test/one-more.json"})
}

// TestChildBuckets shows that each child has its own rate-limit bucket
// with the instance defaults, and that management calls draw on the
// parent's bucket.
func TestChildBuckets(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		const capacity = 8
		f := setup(t, open, appview.Config{Clients: appview.ClientConfig{DefaultRateLimitCapacity: capacity, DefaultRateLimitRefillRate: 0.0001}})
		one, _ := create(t, f.alice, nil)
		two, _ := create(t, f.alice, nil)

		// Exhaust the parent's bucket with management calls.
		var r testenv.Response
		for i := 0; i <= capacity; i++ {
			if r = f.alice.Call(t, "GET", listPath, nil); r.Status != 200 {
				break
			}
		}
		if r.Status != 429 || r.Header.Get("Retry-After") == "" {
			t.Fatalf("parent bucket never ran out: %d %s", r.Status, r.Raw)
		}
		if r := f.env.Do(t, "GET", "/xrpc/app.test.ping", nil, "X-Client-Key", f.parent.Key); r.Status != 429 {
			t.Fatalf("parent after exhaustion: %d %s", r.Status, r.Raw)
		}
		if r := f.alice.Call(t, "POST", createPath, newClientBody(nil)); r.Status != 429 {
			t.Fatalf("create with the parent's bucket empty: %d %s", r.Status, r.Raw)
		}

		// The first child still works, for exactly the default capacity.
		for i := range capacity {
			if r := f.env.Do(t, "GET", "/xrpc/app.test.ping", nil, "X-Client-Key", one.Client.ClientKey); r.Status != 200 {
				t.Fatalf("child call %d: %d %s", i, r.Status, r.Raw)
			}
		}
		if r := f.env.Do(t, "GET", "/xrpc/app.test.ping", nil, "X-Client-Key", one.Client.ClientKey); r.Status != 429 {
			t.Fatalf("child beyond the default capacity: %d %s", r.Status, r.Raw)
		}
		// The second child's bucket is its own too.
		if r := f.env.Do(t, "GET", "/xrpc/app.test.ping", nil, "X-Client-Key", two.Client.ClientKey); r.Status != 200 {
			t.Fatalf("second child: %d %s", r.Status, r.Raw)
		}
	})
}
