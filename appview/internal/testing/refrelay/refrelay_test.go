package refrelay_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/testing/refpds"
	"github.com/lexview/lexview/appview/internal/testing/refrelay"
)

// TestRelayCrawlsReferencePDS: the stock relay, given the PDS as a host
// row, subscribes to it, takes its accounts and verifies their commits:
// getLatestCommit on the relay answers the revision the PDS wrote.
func TestRelayCrawlsReferencePDS(t *testing.T) {
	refrelay.Require(t)
	n := refpds.Start(t)
	r := refrelay.Start(t, n)

	hosts := r.Hosts(t)
	if len(hosts) != 1 || hosts[0].Host != r.Host || hosts[0].SSL || !hosts[0].Registered || !hosts[0].HasActiveConnection {
		t.Fatalf("hosts: %+v, want %s only, active, without TLS", hosts, r.Host)
	}

	// Why the harness writes the host row: the admin requestCrawl checks
	// the host through the relay's SSRF guard, which refuses loopback.
	status, body := requestCrawl(t, r)
	t.Logf("admin requestCrawl of %s: HTTP %d %s", r.Host, status, body)
	if status != http.StatusBadRequest || !strings.Contains(body, "HostNotFound") {
		t.Errorf("admin requestCrawl of %s: HTTP %d %s; want 400 HostNotFound (its SSRF guard)", r.Host, status, body)
	}

	alice := n.CreateAccount(t, "alice")
	var rev string
	alice.PutRecord(t, "com.example.note", "self", map[string]any{"text": "hello"})
	var latest struct {
		Rev string `json:"rev"`
	}
	alice.Query(t, "com.atproto.sync.getLatestCommit", url.Values{"did": {alice.DID}}, &latest)
	rev = latest.Rev

	deadline := time.Now().Add(10 * time.Second)
	for {
		got, status := relayLatestRev(t, r, alice.DID)
		if got == rev {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the relay's latest commit of %s: rev %q (HTTP %d), want %q", alice.DID, got, status, rev)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if hosts := r.Hosts(t); len(hosts) != 1 || hosts[0].RepoCount != 1 {
		t.Fatalf("hosts after alice's commit: %+v, want one account", hosts)
	}
}

// requestCrawl asks the relay's admin API to crawl its PDS again.
func requestCrawl(t *testing.T, r *refrelay.Relay) (int, string) {
	t.Helper()
	body := strings.NewReader(`{"hostname":"` + r.Host + `"}`)
	req, err := http.NewRequest(http.MethodPost, r.URL+"/admin/pds/requestCrawl", body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth("admin", r.AdminPassword)
	resp, err := r.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// relayLatestRev is the relay's com.atproto.sync.getLatestCommit rev of did
// ("" while it does not know the account).
func relayLatestRev(t *testing.T, r *refrelay.Relay, did string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL+"/xrpc/com.atproto.sync.getLatestCommit?did="+url.QueryEscape(did), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := r.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out struct {
		Rev string `json:"rev"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &out) != nil {
		return "", resp.StatusCode
	}
	return out.Rev, resp.StatusCode
}
