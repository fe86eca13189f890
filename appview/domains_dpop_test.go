package appview_test

import (
	"net/http/httptest"
	"testing"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/appview/internal/web/fixed"
	"github.com/lexview/lexview/internal/oauthtest"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestDPoPOnEveryDomain: a DPoP proof's htu names the registered domain
// the request arrived on; on a host that is not registered, PUBLIC_URL's
// origin, as before domains existed.
func TestDPoPOnEveryDomain(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		su := env.Bootstrap(t)
		pds := oauthtest.New(t, oauthtest.Options{})
		did := env.PLC.NewAccount(t, false, pds.URL).DID.String()
		client, secret := env.NewClient(t, apiclients.NewClient{})
		d := env.SignIn(t, pds, testenv.AppClient{Key: client.Key, Secret: secret}, did)

		second := httptest.NewServer(env.App)
		t.Cleanup(second.Close)
		unregistered := httptest.NewServer(env.App)
		t.Cleanup(unregistered.Close)
		if r := su.Do(t, "POST", "/admin/domains", map[string]any{"url": second.URL}); r.Status != 201 {
			t.Fatalf("add domain: %d %s", r.Status, r.Raw)
		}
		call := func(server, htuOrigin string) int {
			t.Helper()
			proof, err := d.Signer.NewProof("GET", htuOrigin+fixed.GetProfilePath, d.AccessToken, "")
			if err != nil {
				t.Fatal(err)
			}
			r := testenv.Request(t, "GET", server+fixed.GetProfilePath, nil, "X-Client-Key", client.Key,
				"Authorization", "DPoP "+d.AccessToken, "DPoP", proof)
			return r.Status
		}
		for _, c := range []struct {
			name, server, htu string
			want              int
		}{
			{"primary domain", env.URL, env.URL, 200},
			{"second domain", second.URL, second.URL, 200},
			{"second domain, proof for the primary", second.URL, env.URL, 401},
			{"primary, proof for the second domain", env.URL, second.URL, 401},
			{"unregistered host, proof for PUBLIC_URL", unregistered.URL, env.URL, 200},
			{"unregistered host, proof for itself", unregistered.URL, unregistered.URL, 401},
		} {
			if got := call(c.server, c.htu); got != c.want {
				t.Errorf("%s: %d, want %d", c.name, got, c.want)
			}
		}
	})
}
