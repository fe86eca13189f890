package appview_test

import (
	"context"
	"testing"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/appview/internal/web/fixed"
	"github.com/lexview/lexview/internal/oauthtest"
	"github.com/lexview/lexview/storage/postgres"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestDPoPReplayAcrossInstances: two instances on one PostgreSQL database,
// each with its own connections, behind one PUBLIC_URL (as behind a load
// balancer): a DPoP proof accepted by one is refused by the other.
func TestDPoPReplayAcrossInstances(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storagetest.PostgresURL(t)
	open := func() *postgres.Store {
		s, err := postgres.Open(ctx, url, postgres.Options{MaxConns: 8})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a := testenv.New(t, open(), appview.Config{})
	pds := oauthtest.New(t, oauthtest.Options{})
	did := a.PLC.NewAccount(t, false, pds.URL).DID.String()
	client, secret := a.NewClient(t, apiclients.NewClient{})
	d := a.SignIn(t, pds, testenv.AppClient{Key: client.Key, Secret: secret}, did)
	b := testenv.New(t, open(), appview.Config{PublicURL: a.URL, Network: appview.NetworkConfig{PLCURL: a.PLC.URL}})

	call := func(env *testenv.Env, proof string) testenv.Response {
		t.Helper()
		return env.Do(t, "GET", fixed.GetProfilePath, nil, "X-Client-Key", client.Key,
			"Authorization", "DPoP "+d.AccessToken, "DPoP", proof)
	}
	for _, c := range []struct {
		name        string
		first, then *testenv.Env
	}{{"A then B", a, b}, {"B then A", b, a}} {
		proof := d.Proof(t, "GET", fixed.GetProfilePath)
		if r := call(c.first, proof); r.Status != 200 {
			t.Fatalf("%s: first use: %d %s", c.name, r.Status, r.Raw)
		}
		r := call(c.then, proof)
		if r.Status != 401 || r.Error(t) != "DPoP proof has already been used" {
			t.Fatalf("%s: replay on the other instance: %d %s", c.name, r.Status, r.Raw)
		}
	}
}
