package appview_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/internal/netguard"
)

// TestSourceOriginsOnlyForSources: with PLC_URL, RELAY_URL and
// JETSTREAM_URL on loopback ports, the PLC lookups reach the PLC (the
// sources' own clients may reach their configured origins), but the
// default outbound client, which serves targets that clients and DID
// documents choose (the XRPC proxy, network lexicons, PDS calls, scripts'
// http.*), reaches none of them: a DID document naming the relay's
// origin as its PDS cannot make the instance call the relay.
func TestSourceOriginsOnlyForSources(t *testing.T) {
	t.Parallel()
	reached := make(chan string, 16)
	stub := func(name string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached <- name }))
		t.Cleanup(s.Close)
		return s
	}
	relay, jetstream := stub("relay"), stub("jetstream")
	plc := testenv.NewPLC(t)
	const did = "did:plc:sourceorigins0000000000a"
	plc.Register(did, "alice.test", relay.URL)
	app, err := appview.New(appview.Config{
		DatabaseURL: "sqlite://" + filepath.Join(t.TempDir(), "o.db"),
		Logger:      quiet,
		Ingest:      appview.IngestConfig{JetstreamURL: "off", RelayURL: relay.URL},
		Network:     appview.NetworkConfig{PLCURL: plc.URL},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Shutdown(context.Background())

	// The PLC lookups reach the PLC on loopback.
	id, err := app.Config().Network.Directory.LookupDID(context.Background(), syntax.DID(did))
	if err != nil {
		t.Fatalf("the PLC on loopback was not reached: %v", err)
	}
	pds := id.PDSEndpoint()
	if pds != relay.URL {
		t.Fatalf("PDS endpoint %q", pds)
	}
	// The default client reaches none of the sources' origins, so the
	// PDS the document names (the relay) is refused.
	c := app.Config().Network.HTTPClient
	for _, url := range []string{pds + "/xrpc/com.atproto.repo.getRecord", plc.URL + "/" + did, jetstream.URL} {
		if resp, err := c.Get(url); !errors.Is(err, netguard.ErrBlocked) {
			if err == nil {
				resp.Body.Close()
			}
			t.Errorf("%s: the default client reached a source's origin: %v", url, err)
		}
	}
	select {
	case name := <-reached:
		t.Fatalf("%s was reached through the default client", name)
	default:
	}
}
