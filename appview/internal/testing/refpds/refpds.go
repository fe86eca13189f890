// Package refpds runs the Bluesky reference PDS (npm @atproto/pds, through
// TestNetworkNoAppView of @atproto/dev-env) with an in-memory PLC directory on
// 127.0.0.1, for end-to-end tests against the real implementation.
//
// The packages come from the cache that scripts/lib/devenv.sh installs and
// names in APPVIEW_DEVENV_DIR (scripts/test does both). Without it, Start
// skips the test, or fails it when CI=true. Each Start runs its own network
// (a node process: ~4 s to start, ~250 MB of memory), stopped when the test
// ends.
//
// Things the reference PDS does that a stand-in would not:
//   - DID documents from its PLC render the #atproto key in the legacy
//     EcdsaSecp256k1VerificationKey2019 form;
//   - the #atproto_pds endpoint in DID documents (and its OAuth issuer) is
//     PDSPublicURL, http://localhost:<port>, while PDSURL is the same server
//     as http://127.0.0.1:<port>;
//   - handles (*.test) resolve only through the PDS itself
//     (GET {PDSURL}/.well-known/atproto-did with the handle as Host, or
//     com.atproto.identity.resolveHandle), not through DNS;
//   - there is no com.atproto.sync.listReposByCollection.
package refpds

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/testing/testproc"
)

// DevenvDirEnv names the variable holding the directory with node_modules/
// of the pinned @atproto/dev-env (set by scripts/lib/devenv.sh). A relative
// path is taken from the repository root.
const DevenvDirEnv = "APPVIEW_DEVENV_DIR"

// StartTimeout bounds how long Start waits for the network to come up,
// once it holds one of the machine's start slots (testproc.StartSlots).
const StartTimeout = 120 * time.Second

// script is the Node program that runs the network, relative to the repository root.
const script = "scripts/devenv/start-network.mjs"

// Network is a running reference PDS and PLC directory.
type Network struct {
	// PDSURL is the PDS on loopback, e.g. http://127.0.0.1:41234.
	PDSURL string
	// PDSPublicURL is the URL the PDS announces: the #atproto_pds service
	// endpoint of its accounts' DID documents and its OAuth issuer, e.g.
	// http://localhost:41234 (same port as PDSURL).
	PDSPublicURL string
	// PDSDID is the PDS's service DID (did:web:localhost).
	PDSDID string
	// PLCURL is the PLC directory, e.g. http://127.0.0.1:41235; GET {PLCURL}/{did}
	// answers DID documents.
	PLCURL string
	// AdminPassword authenticates admin calls (HTTP basic auth, user "admin").
	AdminPassword string

	// HTTP is the client the helpers use.
	HTTP *http.Client

	mail *mailbox
}

// Account is an account on the reference PDS, with a session.
type Account struct {
	Network    *Network
	DID        string
	Handle     string
	Email      string
	Password   string
	AccessJwt  string
	RefreshJwt string
}

// readyLine is the JSON line start-network.mjs prints once listening.
type readyLine struct {
	PDS           string `json:"pds"`
	PDSPublicURL  string `json:"pdsPublicUrl"`
	PDSDID        string `json:"pdsDid"`
	PLC           string `json:"plc"`
	AdminPassword string `json:"adminPassword"`
}

// Start runs a reference PDS and PLC directory for the rest of the test.
func Start(t testing.TB) *Network {
	t.Helper()
	dir := testproc.RequireEnv(t, DevenvDirEnv, "the reference PDS", "scripts/lib/devenv.sh")
	root, err := testproc.RepoRoot(script)
	if err != nil {
		t.Fatalf("refpds: %v", err)
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@atproto", "dev-env")); err != nil {
		t.Fatalf("refpds: %s=%s has no node_modules/@atproto/dev-env: %v", DevenvDirEnv, dir, err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("refpds: %s is set but node is not on PATH: %v", DevenvDirEnv, err)
	}

	started := time.Now()
	ready := make(chan readyLine, 1)
	stderr := &testproc.TailBuffer{Max: 64 << 10}
	mail := &mailbox{tokens: map[string]chan string{}}
	stdout := &lineWriter{fn: func(line []byte) {
		var m mailLine
		if json.Unmarshal(line, &m) == nil && m.Mail != "" {
			mail.deliver(m)
			return
		}
		var r readyLine
		if json.Unmarshal(line, &r) == nil && r.PDS != "" {
			select {
			case ready <- r:
			default:
			}
			return
		}
		fmt.Fprintf(stderr, "stdout: %s\n", line) // not expected; keep it for the log
	}}

	cmd := exec.Command(node, filepath.Join(root, script))
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		DevenvDirEnv+"="+dir,
		"NODE_PATH="+filepath.Join(dir, "node_modules"),
		// The script keeps its data in a temporary directory it removes on
		// exit; one under the test's own would go even after a crash.
		"TMPDIR="+t.TempDir(),
	)
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatalf("refpds: %v", err)
	}
	release, err := testproc.AcquireStartSlot(t.Context())
	if err != nil {
		t.Fatalf("refpds: %v", err)
	}
	defer release()
	if err := cmd.Start(); err != nil {
		t.Fatalf("refpds: start node: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	// stop ends the network: closing stdin asks for a clean shutdown, then
	// SIGTERM, then SIGKILL.
	var stopOnce sync.Once
	stop := func() {
		stopOnce.Do(func() {
			stdin.Close()
			select {
			case <-exited:
				return
			case <-time.After(20 * time.Second):
			}
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
				return
			case <-time.After(5 * time.Second):
			}
			_ = cmd.Process.Kill()
			<-exited
		})
	}

	var r readyLine
	timeout := time.NewTimer(StartTimeout)
	defer timeout.Stop()
	select {
	case r = <-ready:
	case err := <-exited:
		exited <- err // for stop
		stop()
		t.Fatalf("refpds: start-network.mjs exited before it was ready (%v); its output:\n%s", err, stderr.String())
	case <-timeout.C:
		stop()
		t.Fatalf("refpds: network not ready after %v; output:\n%s", StartTimeout, stderr.String())
	}
	release() // the network is up: let another start
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("refpds: output of start-network.mjs:\n%s", stderr.String())
		}
	})
	t.Logf("refpds: PDS %s (public %s), PLC %s, up in %v", r.PDS, r.PDSPublicURL, r.PLC, time.Since(started).Round(time.Millisecond))
	return &Network{
		PDSURL:        r.PDS,
		PDSPublicURL:  r.PDSPublicURL,
		PDSDID:        r.PDSDID,
		PLCURL:        r.PLC,
		AdminPassword: r.AdminPassword,
		HTTP:          &http.Client{Timeout: 30 * time.Second},
		mail:          mail,
	}
}

// --- XRPC ----------------------------------------------------------------------

// XRPCError is a non-2xx answer from the PDS.
type XRPCError struct {
	NSID    string
	Status  int
	Name    string // the "error" field, e.g. "InvalidRequest"
	Message string
	Body    string
}

func (e *XRPCError) Error() string {
	return fmt.Sprintf("%s: HTTP %d %s: %s", e.NSID, e.Status, e.Name, e.Message)
}

// XRPC calls nsid on the PDS: a query (GET with params) when in is nil, a
// procedure (POST with in as JSON) otherwise. auth is the whole Authorization
// header value ("Bearer ..." / "Basic ..."), or empty. The JSON answer is
// decoded into out unless out is nil. A non-2xx answer is an *XRPCError.
func (n *Network) XRPC(ctx context.Context, nsid, auth string, params url.Values, in, out any) error {
	u := n.PDSURL + "/xrpc/" + nsid
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	method, body := http.MethodGet, io.Reader(nil)
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s: %w", nsid, err)
		}
		method, body = http.MethodPost, bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := n.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", nsid, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s: reading answer: %w", nsid, err)
	}
	if resp.StatusCode/100 != 2 {
		e := &XRPCError{NSID: nsid, Status: resp.StatusCode, Body: string(raw)}
		var eb struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		}
		if json.Unmarshal(raw, &eb) == nil {
			e.Name, e.Message = eb.Error, eb.Message
		}
		return e
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("%s: decoding answer: %w (body %.200q)", nsid, err, raw)
		}
	}
	return nil
}

// Query calls a query without authentication; failures fail the test.
func (n *Network) Query(t testing.TB, nsid string, params url.Values, out any) {
	t.Helper()
	if err := n.XRPC(context.Background(), nsid, "", params, nil, out); err != nil {
		t.Fatalf("refpds: %v", err)
	}
}

// AdminAuth is the Authorization header value for admin calls.
func (n *Network) AdminAuth() string {
	return "Basic " + basicAuth("admin", n.AdminPassword)
}

// CreateAccount creates an account with com.atproto.server.createAccount
// (no invite code is needed) and returns it with a session. A handle without
// a dot gets ".test" appended; the part before ".test" must be 3 to 18
// characters.
func (n *Network) CreateAccount(t testing.TB, handle string) *Account {
	t.Helper()
	if !strings.Contains(handle, ".") {
		handle += ".test"
	}
	a := &Account{
		Network:  n,
		Handle:   handle,
		Email:    strings.ReplaceAll(handle, ".", "-") + "@example.com",
		Password: "pw-" + randomHex(8),
	}
	var out struct {
		DID        string `json:"did"`
		Handle     string `json:"handle"`
		AccessJwt  string `json:"accessJwt"`
		RefreshJwt string `json:"refreshJwt"`
	}
	in := map[string]any{"handle": a.Handle, "email": a.Email, "password": a.Password}
	if err := n.XRPC(context.Background(), "com.atproto.server.createAccount", "", nil, in, &out); err != nil {
		t.Fatalf("refpds: create account %s: %v", handle, err)
	}
	a.DID, a.Handle, a.AccessJwt, a.RefreshJwt = out.DID, out.Handle, out.AccessJwt, out.RefreshJwt
	return a
}

// Auth is the Authorization header value of the account's session.
func (a *Account) Auth() string { return "Bearer " + a.AccessJwt }

// Query calls a query as the account; failures fail the test.
func (a *Account) Query(t testing.TB, nsid string, params url.Values, out any) {
	t.Helper()
	if err := a.Network.XRPC(context.Background(), nsid, a.Auth(), params, nil, out); err != nil {
		t.Fatalf("refpds: %s: %v", a.Handle, err)
	}
}

// Procedure calls a procedure (JSON in, JSON out) as the account; failures
// fail the test.
func (a *Account) Procedure(t testing.TB, nsid string, in, out any) {
	t.Helper()
	if in == nil {
		in = map[string]any{}
	}
	if err := a.Network.XRPC(context.Background(), nsid, a.Auth(), nil, in, out); err != nil {
		t.Fatalf("refpds: %s: %v", a.Handle, err)
	}
}

type writeResult struct {
	URI string `json:"uri"`
	CID string `json:"cid"`
}

// CreateRecord writes a record with com.atproto.repo.createRecord (record
// key chosen by the PDS) and returns its at:// URI and CID. "$type" is set
// to collection when the record has none.
func (a *Account) CreateRecord(t testing.TB, collection string, record map[string]any) (uri, cid string) {
	t.Helper()
	var out writeResult
	a.Procedure(t, "com.atproto.repo.createRecord", map[string]any{
		"repo":       a.DID,
		"collection": collection,
		"record":     withType(record, collection),
	}, &out)
	return out.URI, out.CID
}

// PutRecord creates or replaces the record at collection/rkey with
// com.atproto.repo.putRecord and returns its at:// URI and CID. "$type" is
// set to collection when the record has none.
func (a *Account) PutRecord(t testing.TB, collection, rkey string, record map[string]any) (uri, cid string) {
	t.Helper()
	var out writeResult
	a.Procedure(t, "com.atproto.repo.putRecord", map[string]any{
		"repo":       a.DID,
		"collection": collection,
		"rkey":       rkey,
		"record":     withType(record, collection),
	}, &out)
	return out.URI, out.CID
}

// DeleteRecord deletes collection/rkey with com.atproto.repo.deleteRecord.
func (a *Account) DeleteRecord(t testing.TB, collection, rkey string) {
	t.Helper()
	a.Procedure(t, "com.atproto.repo.deleteRecord", map[string]any{
		"repo":       a.DID,
		"collection": collection,
		"rkey":       rkey,
	}, nil)
}

// ServiceAuth gets a service-auth JWT (ES256K, signed with the account's
// #atproto key) for audience aud (a DID) and, when lxm is not empty, that
// method only, with com.atproto.server.getServiceAuth.
func (a *Account) ServiceAuth(t testing.TB, aud, lxm string) string {
	t.Helper()
	params := url.Values{"aud": {aud}}
	if lxm != "" {
		params.Set("lxm", lxm)
	}
	var out struct {
		Token string `json:"token"`
	}
	a.Query(t, "com.atproto.server.getServiceAuth", params, &out)
	return out.Token
}

func withType(record map[string]any, collection string) map[string]any {
	if _, ok := record["$type"]; ok {
		return record
	}
	r := make(map[string]any, len(record)+1)
	for k, v := range record {
		r[k] = v
	}
	r["$type"] = collection
	return r
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func basicAuth(user, pass string) string {
	req := http.Request{Header: http.Header{}}
	req.SetBasicAuth(user, pass)
	return strings.TrimPrefix(req.Header.Get("Authorization"), "Basic ")
}

// --- process output --------------------------------------------------------------

// lineWriter calls fn with each complete, non-empty line written to it.
type lineWriter struct {
	mu  sync.Mutex
	buf []byte
	fn  func(line []byte)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		line := bytes.TrimSpace(w.buf[:i])
		w.buf = w.buf[i+1:]
		if len(line) > 0 {
			w.fn(line)
		}
	}
	if len(w.buf) > 1<<20 { // a runaway line without newline
		w.buf = w.buf[:0]
	}
	return len(p), nil
}
