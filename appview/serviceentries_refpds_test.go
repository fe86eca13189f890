package appview_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/refpds"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestServiceEntriesReferencePDS: service-auth JWTs minted by the
// reference PDS (com.atproto.server.getServiceAuth, aud the instance's
// bare DID as the PDS sends it when proxying, lxm the method) call a
// method bound to a service entry under each access mode. The admin is an
// account of the same PDS, calling the admin API with tokens it mints.
func TestServiceEntriesReferencePDS(t *testing.T) {
	t.Parallel()
	n := refpds.Start(t)
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		ctx := context.Background()
		env := testenv.New(t, open(t), appview.Config{Network: appview.NetworkConfig{PLCURL: n.PLCURL}})
		putRefNoteLexicons(t, env)
		client, _ := env.NewClient(t, apiclients.NewClient{})
		did := env.App.InstanceDID(ctx)
		db := t.Name()[strings.LastIndexByte(t.Name(), '/')+1:]
		root, alice, bob := n.CreateAccount(t, "sr"+db), n.CreateAccount(t, "sa"+db), n.CreateAccount(t, "sb"+db)

		claim := []string{"X-Claim-Token", env.App.ClaimToken()}
		adminDo := func(method, path string, body any) testenv.Response {
			h := append(testenv.Bearer(root.ServiceAuth(t, did, "")), claim...)
			claim = nil // the first request made root the super user
			return env.Do(t, method, path, body, h...)
		}
		const method = "com.example.getNotes"
		call := func(token string) testenv.Response {
			return env.Do(t, "GET", "/xrpc/"+method, nil, append(testenv.Bearer(token), "X-Client-Key", client.Key)...)
		}

		r := adminDo("POST", "/admin/service-entries", map[string]any{"fragment_id": "#bsky_appview", "service_type": "BskyAppView"})
		expect(t, r, 201, "")
		entry := fmt.Sprintf("/admin/service-entries/%v", r.Object(t)["id"])
		expect(t, adminDo("POST", entry+"/xrpcs", map[string]any{"lexicon_ids": []string{method}}), 204, "")

		// all
		expect(t, call(alice.ServiceAuth(t, did, method)), 200, "")
		expect(t, call(alice.ServiceAuth(t, did, "com.example.createNote")), 401,
			"invalid service auth token: the token is bound to another method (lxm com.example.createNote)")
		// An aud with a fragment, if the reference PDS mints one.
		var fragToken struct {
			Token string `json:"token"`
		}
		err := n.XRPC(ctx, "com.atproto.server.getServiceAuth", alice.Auth(),
			url.Values{"aud": {did + "#bsky_appview"}, "lxm": {method}}, nil, &fragToken)
		var xe *refpds.XRPCError
		switch {
		case err == nil:
			expect(t, call(fragToken.Token), 200, "")
		case errors.As(err, &xe):
			t.Logf("the reference PDS mints no token for an aud with a fragment (%v): the stand-in test covers that case", err)
		default:
			t.Fatal(err)
		}

		// allowlist, without then with alice
		expect(t, adminDo("PUT", entry, map[string]any{"access_mode": "allowlist"}), 204, "")
		expect(t, call(alice.ServiceAuth(t, did, method)), 403, "caller is not on the service entry's allowlist")
		expect(t, adminDo("POST", entry+"/allowlist", map[string]any{"dids": []string{alice.DID}}), 204, "")
		expect(t, call(alice.ServiceAuth(t, did, method)), 200, "")
		expect(t, call(bob.ServiceAuth(t, did, method)), 403, "caller is not on the service entry's allowlist")

		// disabled
		expect(t, adminDo("PUT", entry, map[string]any{"access_mode": "disabled"}), 204, "")
		expect(t, call(alice.ServiceAuth(t, did, method)), 403, "method is disabled for proxied calls")
		expect(t, call(bob.ServiceAuth(t, did, method)), 403, "method is disabled for proxied calls")
		// The same method without service auth is unaffected.
		expect(t, env.Do(t, "GET", "/xrpc/"+method, nil, "X-Client-Key", client.Key), 200, "")
	})
}

// TestServiceEntriesProxiedByReferencePDS: a real proxied call. The
// instance is served on http://localhost:PORT (a did:web the reference PDS
// resolves over http), lists its service entry in its DID document, and a
// user's call to the reference PDS with `atproto-proxy: DID#bsky_appview`
// reaches the bound method with the PDS's service-auth JWT; the entry's
// access mode decides.
func TestServiceEntriesProxiedByReferencePDS(t *testing.T) {
	t.Parallel()
	n := refpds.Start(t)
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		ctx := context.Background()
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := lis.Addr().(*net.TCPAddr).Port
		env := testenv.New(t, open(t), appview.Config{
			Network:   appview.NetworkConfig{PLCURL: n.PLCURL},
			PublicURL: fmt.Sprintf("http://localhost:%d", port),
		})
		serve := func(l net.Listener) {
			srv := &http.Server{Handler: env.App.Handler(), ReadHeaderTimeout: 10 * time.Second}
			go func() { _ = srv.Serve(l) }()
			t.Cleanup(func() { _ = srv.Close() })
		}
		serve(lis)
		if l6, err := net.Listen("tcp", fmt.Sprintf("[::1]:%d", port)); err == nil {
			serve(l6) // "localhost" may resolve to ::1 first
		}
		putRefNoteLexicons(t, env)
		client, _ := env.NewClient(t, apiclients.NewClient{})
		did := env.App.InstanceDID(ctx)
		if did != fmt.Sprintf("did:web:localhost%%3A%d", port) {
			t.Fatalf("instance DID %q", did)
		}
		db := t.Name()[strings.LastIndexByte(t.Name(), '/')+1:]
		root, alice := n.CreateAccount(t, "pr"+db), n.CreateAccount(t, "pa"+db)
		claim := []string{"X-Claim-Token", env.App.ClaimToken()}
		adminDo := func(method, path string, body any) testenv.Response {
			h := append(testenv.Bearer(root.ServiceAuth(t, did, "")), claim...)
			claim = nil
			return env.Do(t, method, path, body, h...)
		}
		r := adminDo("POST", "/admin/service-entries", map[string]any{"fragment_id": "#bsky_appview", "service_type": "BskyAppView"})
		expect(t, r, 201, "")
		entry := fmt.Sprintf("/admin/service-entries/%v", r.Object(t)["id"])
		const method = "com.example.getNotes"
		expect(t, adminDo("POST", entry+"/xrpcs", map[string]any{"lexicon_ids": []string{method}}), 204, "")

		// Through alice's PDS; the API client key rides in the query
		// string, which the PDS forwards.
		proxied := func() testenv.Response {
			return testenv.Request(t, "GET", n.PDSURL+"/xrpc/"+method+"?client_key="+url.QueryEscape(client.Key), nil,
				"Authorization", alice.Auth(), "atproto-proxy", did+"#bsky_appview")
		}
		r = proxied()
		if r.Status != 200 {
			t.Fatalf("proxied call, mode all: %d %s", r.Status, r.Raw)
		}
		expect(t, adminDo("PUT", entry, map[string]any{"access_mode": "allowlist"}), 204, "")
		// The PDS forwards Lexview's refusal, status and error.
		expect(t, proxied(), 403, "caller is not on the service entry's allowlist")
		expect(t, adminDo("POST", entry+"/allowlist", map[string]any{"dids": []string{alice.DID}}), 204, "")
		if r = proxied(); r.Status != 200 {
			t.Fatalf("proxied call, allowlist with the caller: %d %s", r.Status, r.Raw)
		}
		expect(t, adminDo("PUT", entry, map[string]any{"access_mode": "disabled"}), 204, "")
		// The document no longer lists the entry, but the PDS still has
		// the one it cached: the call arrives and is refused.
		expect(t, proxied(), 403, "method is disabled for proxied calls")
	})
}
