// Package refrelay runs indigo's stock relay (github.com/bluesky-social/
// indigo/cmd/relay, the version in go.mod, unmodified) on 127.0.0.1 in
// front of the reference PDS of a [refpds.Network], for end-to-end tests of
// a consumer of a relay's firehose.
//
//	n := refpds.Start(t)
//	r := refrelay.Start(t, n) // r.URL: its com.atproto.sync.subscribeRepos
//	alice := n.CreateAccount(t, "alice") // after Start: see below
//	alice.CreateRecord(t, "com.example.note", rec) // reaches r's firehose
//
// How the relay is made to crawl a loopback PDS. Its admin requestCrawl
// (POST /admin/pds/requestCrawl) accepts "localhost:<port>" but first calls
// the host's describeServer through its SSRF guard
// (ssrf.PublicOnlyTransport), which refuses loopback addresses: the PDS
// is "unreachable". At startup, though, the relay subscribes to every
// host row of its database with status "active", and for a host without
// TLS (no_ssl) it dials the WebSocket without that guard. So Start runs the
// relay once (it creates its schema), stops it, inserts the host row
// (hostname "localhost:<PDS port>", no_ssl, status active) into its SQLite
// file and starts it again. The PDS's DID documents name
// http://localhost:<port> as the accounts' PDS, the host name the relay
// checks each account against. Nothing of the relay is changed or
// configured other than through its own flags and database.
//
// Start knows the relay is connected from its own log (run with
// --log-level debug): its slurper logs "event subscription response" with
// code 101 once the WebSocket handshake with the host succeeded. Its admin
// API cannot tell: /admin/subs/getUpstreamConns and the HasActiveConnection
// of /admin/pds/list name a host as soon as its subscription goroutine
// exists, before (and while) it dials.
//
// What the relay does that a consumer sees:
//   - it subscribes to the PDS without a cursor (its host row has no
//     sequence number yet), so it relays only events from its connection
//     on: create the accounts after Start;
//   - it verifies each commit itself (signature against the PLC directory,
//     MST inversion) and renumbers events with its own sequence numbers,
//     1, 2, 3, ... with no gaps;
//   - it keeps its events on disk (--persist-dir) and replays those after
//     a subscriber's cursor, as a real relay does.
//
// The binary comes from the cache that scripts/lib/relay.sh builds and
// names in APPVIEW_RELAY_BIN (scripts/test does both). Without it, Start
// skips the test, or fails it when CI=true ([Require] checks that before
// anything is started). Each relay is a process of ~36 MB (idle), stopped
// when the test ends; Start took 0.35-0.9 s (both runs and the
// connection) on a shared 2-core machine.
package refrelay

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3" // the relay's database, written while it is stopped

	"github.com/lexview/lexview/appview/internal/testing/refpds"
	"github.com/lexview/lexview/appview/internal/testing/testproc"
)

// BinEnv names the variable holding the path of the relay binary (set by
// scripts/lib/relay.sh).
const BinEnv = "APPVIEW_RELAY_BIN"

// StartTimeout bounds each start of the relay.
const StartTimeout = 60 * time.Second

// ConnectTimeout bounds how long Start waits for the relay to connect to
// the PDS.
const ConnectTimeout = 20 * time.Second

// AccountLimit is the host row's limit of active accounts: above it the
// relay throttles new accounts of the PDS.
const AccountLimit = 1000

// portAttempts bounds the tries with fresh ports when a chosen one is taken
// between choosing and listening.
const portAttempts = 5

// Relay is a running stock relay crawling a reference PDS.
type Relay struct {
	// URL is the relay on loopback, e.g. http://127.0.0.1:41234; its
	// firehose is {URL}/xrpc/com.atproto.sync.subscribeRepos.
	URL string
	// AdminPassword authenticates its admin API (HTTP basic auth, user
	// "admin").
	AdminPassword string
	// Host is the PDS as the relay knows it: its host row's hostname,
	// "localhost:<port>".
	Host string
	// HTTP is the client the helpers use.
	HTTP *http.Client

	metricsURL string // its Prometheus metrics
}

// Require returns the provisioned path, waiting while it is pending. It
// skips the test when the relay is not provisioned (BinEnv
// unset), or fails it then when CI=true. Start does the same; calling
// Require first saves starting a reference PDS for a test that would skip.
func Require(t testing.TB) string {
	t.Helper()
	return testproc.RequireEnv(t, BinEnv, "indigo's relay", "scripts/lib/relay.sh")
}

// Start runs the relay with its state in a temporary directory, makes it
// crawl n's PDS and waits until it is connected to the PDS's firehose, for
// the rest of the test.
func Start(t testing.TB, n *refpds.Network) *Relay {
	t.Helper()
	bin := Require(t)
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		t.Fatalf("refrelay: %s=%s is not an executable file (%v)", BinEnv, bin, err)
	}
	pub, err := url.Parse(n.PDSPublicURL)
	if err != nil || pub.Scheme != "http" || pub.Hostname() != "localhost" || pub.Port() == "" {
		t.Fatalf("refrelay: the PDS's public URL %q is not http://localhost:<port> (%v)", n.PDSPublicURL, err)
	}
	started := time.Now()
	dir := t.TempDir()
	r := &Relay{AdminPassword: randomHex(12), Host: pub.Host, HTTP: &http.Client{Timeout: 10 * time.Second}}
	run := runConfig{bin: bin, plcURL: n.PLCURL, db: filepath.Join(dir, "relay.sqlite"),
		persistDir: filepath.Join(dir, "events"), adminPassword: r.AdminPassword}
	var last *process
	t.Cleanup(func() {
		if last == nil {
			return
		}
		last.stop()
		if t.Failed() {
			t.Logf("refrelay: output of the relay:\n%s", last.output)
		}
	})

	// First run: the relay creates its schema.
	p, err := start(&run)
	if err != nil {
		t.Fatalf("refrelay: %v", err)
	}
	last = p
	p.stop()
	if err := addHost(run.db, r.Host); err != nil {
		t.Fatalf("refrelay: %v", err)
	}
	// Second run: it subscribes to the host at startup.
	if p, err = start(&run); err != nil {
		t.Fatalf("refrelay: %v", err)
	}
	last = p
	if err := p.waitConnected(r.Host, ConnectTimeout); err != nil {
		t.Fatalf("refrelay: %v", err) // the cleanup logs its output
	}
	r.URL = p.url
	r.metricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", run.metrics)
	t.Logf("refrelay: %s crawling %s, up in %v", r.URL, r.Host, time.Since(started).Round(time.Millisecond))
	return r
}

// start runs the relay with c, on c's ports or, when one is taken or not
// chosen yet, on fresh ones (written back to c).
func start(c *runConfig) (*process, error) {
	for attempt := 1; ; attempt++ {
		if c.port == 0 || c.metrics == 0 {
			var err error
			if c.port, err = freePort(); err == nil {
				c.metrics, err = freePort()
			}
			if err != nil {
				return nil, err
			}
		}
		p, err := startProcess(*c, StartTimeout)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, errPortTaken) || attempt == portAttempts {
			return nil, err
		}
		c.port, c.metrics = 0, 0
	}
}

// addHost inserts the host row that makes the relay subscribe to the
// PDS at hostname at startup (see the package documentation). The relay
// must be stopped.
func addHost(db, hostname string) error {
	conn, err := sql.Open("sqlite3", "file:"+db)
	if err != nil {
		return fmt.Errorf("open the relay's database: %w", err)
	}
	defer conn.Close()
	now := time.Now().UTC()
	// last_seq -1: no cursor, the PDS's live events.
	_, err = conn.Exec(`INSERT INTO host (created_at, updated_at, hostname, no_ssl, account_limit, trusted, status, last_seq, account_count)
		VALUES (?, ?, ?, true, ?, false, 'active', -1, 0)`, now, now, hostname, AccountLimit)
	if err != nil {
		return fmt.Errorf("add host %s to the relay's database: %w", hostname, err)
	}
	return nil
}

// Host is a host row as the relay's admin API lists it (GET
// /admin/pds/list).
type Host struct {
	Host                string `json:"Host"`
	SSL                 bool   `json:"SSL"`
	Cursor              int64  `json:"Cursor"`     // the last sequence number of the host it stored
	Registered          bool   `json:"Registered"` // status active
	Blocked             bool   `json:"Blocked"`
	RepoCount           int64  `json:"RepoCount"` // accounts it knows on the host
	HasActiveConnection bool   `json:"HasActiveConnection"`
}

// Hosts lists the relay's hosts; failures fail the test.
func (r *Relay) Hosts(t testing.TB) []Host {
	t.Helper()
	var out []Host
	r.admin(t, "/admin/pds/list", &out)
	return out
}

// EventsSent is the number of events the relay has sent to its firehose
// subscribers, all together since it started (its events_sent_counter
// metric, kept by subscriber address and User-Agent, so it counts
// subscribers that are gone too; the events_consumed of its admin
// /admin/consumers/list is that same counter, not a count per connection);
// failures fail the test.
func (r *Relay) EventsSent(t testing.TB) int64 {
	t.Helper()
	raw := r.get(t, r.metricsURL, "")
	var sum float64
	for line := range strings.Lines(string(raw)) {
		// events_sent_counter{remote_addr="127.0.0.1",user_agent="..."} 16
		if !strings.HasPrefix(line, "events_sent_counter{") && !strings.HasPrefix(line, "events_sent_counter ") {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			t.Fatalf("refrelay: metrics line %q: %v", line, err)
		}
		sum += v
	}
	return int64(sum)
}

// admin GETs path of the admin API and decodes the JSON answer into out.
func (r *Relay) admin(t testing.TB, path string, out any) {
	t.Helper()
	raw := r.get(t, r.URL+path, r.AdminPassword)
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("refrelay: GET %s: %v (%.300s)", path, err, raw)
	}
}

// get GETs u (as the admin when password is not empty) and answers the
// body of a 200 answer; anything else fails the test.
func (r *Relay) get(t testing.TB, u, password string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		t.Fatalf("refrelay: %v", err)
	}
	if password != "" {
		req.SetBasicAuth("admin", password)
	}
	resp, err := r.HTTP.Do(req)
	if err != nil {
		t.Fatalf("refrelay: GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("refrelay: GET %s: HTTP %d %.300s (%v)", u, resp.StatusCode, raw, err)
	}
	return raw
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
