// Package reflabeler runs a real atproto labeler for end-to-end tests:
// @skyware/labeler's LabelerServer (npm, TypeScript) on 127.0.0.1, with a
// fresh did:plc registered in the reference PLC directory of a
// [refpds.Network].
//
// The DID document of the labeler has the #atproto_label verification
// method (its secp256k1 signing key) and the #atproto_labeler service (type
// AtprotoLabeler) at the loopback URL, so a consumer finds it as it would
// find any labeler. Tests emit labels through the harness ([Labeler.Label],
// [Labeler.Negate], [Labeler.LabelExpiring], [Labeler.Emit]), which calls the
// server's createLabel: the label is signed, stored in the server's SQLite
// file and sent to every com.atproto.label.subscribeLabels subscriber.
//
//	n := refpds.Start(t)
//	l := reflabeler.Start(t, n) // l.DID, l.URL, l.SigningKey
//	uri, _ := n.CreateAccount(t, "alice").CreateRecord(t, "com.example.note", rec)
//	spam := l.Label(t, uri, "spam") // spam.Seq: its sequence number in the stream
//	l.Negate(t, uri, "spam")
//	l.LabelExpiring(t, uri, "warn", time.Now().Add(time.Minute))
//	l.Restart(t)   // drops the subscribers; history and sequence numbers stay
//	l.RotateKey(t) // new #atproto_label key in the DID document
//
// The harness calls createLabel over the node process's stdin, one JSON
// line per label, answered on its stdout (scripts/labeler/labeler.mjs
// describes the protocol); no control endpoint listens.
//
// The packages come from the cache that scripts/lib/labeler.sh installs and
// names in APPVIEW_LABELER_DIR (scripts/test does both). Without it, Start
// skips the test, or fails it when CI=true ([Require] checks that before
// anything is started). Each labeler is a node process running
// scripts/labeler/labeler.mjs, stopped when the test ends: ~90 MB, 1.6-3.7 s
// to start and ~10-80 ms per label on a shared 2-core machine under heavy
// load (BenchmarkStart, BenchmarkEmit).
//
// What @skyware/labeler 0.2.0 does on the wire, which a consumer must cope
// with:
//   - subscribeLabels without a cursor sends only new labels; with cursor N
//     it first replays every stored label with a sequence number above N
//     (cursor 0: the whole history), one #labels frame per label;
//   - a cursor above the latest sequence number gets a FutureCursor error
//     frame and the connection is terminated; so does any cursor above 0
//     while it has no label at all;
//   - a subscriber is registered for live labels only after the WebSocket
//     handshake and, with a cursor, after the replay query: a label created
//     in between reaches that subscriber neither way. Tests should emit
//     once the consumer is connected (and caught up), or emit until a
//     label arrives, as TestLabelerEndToEnd does;
//   - the sequence numbers are its SQLite row ids: 1, 2, 3, ... in order of
//     creation, kept across restarts (same database file);
//   - labels always carry ver 1 and neg (false unless negating) and are
//     signed (low-S ECDSA over the DAG-CBOR of the label without sig);
//   - it validates nothing: a malformed subject URI, a future cts or an
//     exp before cts are signed and sent as given.
package reflabeler

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/bluesky-social/indigo/atproto/atcrypto"

	"github.com/lexview/lexview/appview/internal/core/plc"
	"github.com/lexview/lexview/appview/internal/testing/refpds"
	"github.com/lexview/lexview/appview/internal/testing/testproc"
)

// DirEnv names the variable holding the directory with node_modules/ of
// @skyware/labeler (set by scripts/lib/labeler.sh). A relative path is taken
// from the repository root.
const DirEnv = "APPVIEW_LABELER_DIR"

// StartTimeout bounds how long a start of the server may take.
const StartTimeout = 60 * time.Second

// RequestTimeout bounds how long emitting one label may take.
const RequestTimeout = 15 * time.Second

// Service fragments and type in the labeler's DID document.
const (
	KeyFragment     = "atproto_label"   // verification method: the label signing key
	ServiceFragment = "atproto_labeler" // service: the labeler's endpoint
	ServiceType     = "AtprotoLabeler"
)

// script is the node program, relative to the repository root.
const script = "scripts/labeler/labeler.mjs"

// portAttempts bounds the tries with a fresh port when the chosen one is
// taken between choosing and listening.
const portAttempts = 5

// Labeler is a running @skyware/labeler with its did:plc.
type Labeler struct {
	// DID is the labeler's did:plc, registered in the network's PLC directory.
	DID string
	// URL is the server on loopback, e.g. http://127.0.0.1:41234: the
	// #atproto_labeler service endpoint of its DID document.
	URL string
	// SigningKey signs the labels; its public key is the #atproto_label
	// verification method. RotateKey replaces it.
	SigningKey *atcrypto.PrivateKeyK256
	// RotationKey is the only rotation key of the DID.
	RotationKey *atcrypto.PrivateKeyK256

	plc  *plc.Client
	run  runConfig
	mu   sync.Mutex
	proc *process // nil while stopped
}

// Require returns the provisioned path, waiting while it is pending. It
// skips the test when the labeler is not provisioned (DirEnv
// unset), or fails it then when CI=true. Start does the same; calling
// Require first saves starting a reference PDS for a test that would skip.
func Require(t testing.TB) string {
	t.Helper()
	return testproc.RequireEnv(t, DirEnv, "the reference labeler", "scripts/lib/labeler.sh")
}

// Start runs a labeler with a new did:plc registered in n's PLC directory,
// for the rest of the test.
func Start(t testing.TB, n *refpds.Network) *Labeler {
	t.Helper()
	dir := Require(t)
	root, err := testproc.RepoRoot(script)
	if err != nil {
		t.Fatalf("reflabeler: %v", err)
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@skyware", "labeler")); err != nil {
		t.Fatalf("reflabeler: %s=%s has no node_modules/@skyware/labeler: %v", DirEnv, dir, err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("reflabeler: %s is set but node is not on PATH: %v", DirEnv, err)
	}
	started := time.Now()
	l := &Labeler{plc: &plc.Client{URL: n.PLCURL, HTTP: n.HTTP}}
	if l.SigningKey, err = atcrypto.GeneratePrivateKeyK256(); err == nil {
		l.RotationKey, err = atcrypto.GeneratePrivateKeyK256()
	}
	if err != nil {
		t.Fatalf("reflabeler: %v", err)
	}
	tmp := t.TempDir()
	l.run = runConfig{
		node: node, script: filepath.Join(root, script), root: root, pkgDir: dir,
		signingKey: l.SigningKey, db: filepath.Join(tmp, "labels.db"), tmp: tmp,
	}
	t.Cleanup(func() {
		l.Stop()
		if t.Failed() && l.proc != nil {
			t.Logf("reflabeler: output of labeler.mjs:\n%s", l.proc.stderr)
		}
	})

	// The DID names the endpoint, so it is made for each port tried; it is
	// registered once the server listens there.
	var genesis *plc.Operation
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatalf("reflabeler: %v", err)
		}
		genesis, l.DID, err = l.genesis(fmt.Sprintf("http://127.0.0.1:%d", port))
		if err != nil {
			t.Fatalf("reflabeler: %v", err)
		}
		l.run.did, l.run.port = l.DID, port
		err = l.start()
		if err == nil {
			break
		}
		if !errors.Is(err, errPortTaken) || attempt == portAttempts {
			t.Fatalf("reflabeler: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), RequestTimeout)
	defer cancel()
	if err := l.plc.Submit(ctx, l.DID, genesis); err != nil {
		t.Fatalf("reflabeler: register %s at %s: %v", l.DID, n.PLCURL, err)
	}
	t.Logf("reflabeler: %s at %s, up in %v", l.DID, l.URL, time.Since(started).Round(time.Millisecond))
	return l
}

// genesis builds and signs the operation creating the labeler's DID with
// its endpoint at url.
func (l *Labeler) genesis(url string) (*plc.Operation, string, error) {
	st, err := l.state(url, l.SigningKey)
	if err != nil {
		return nil, "", err
	}
	op := st.Next("")
	if err := op.Sign(l.RotationKey); err != nil {
		return nil, "", err
	}
	did, err := op.DID()
	return op, did, err
}

// state is the DID state naming the endpoint url and signing key.
func (l *Labeler) state(url string, signing *atcrypto.PrivateKeyK256) (plc.State, error) {
	rot, err := l.RotationKey.PublicKey()
	if err != nil {
		return plc.State{}, err
	}
	sig, err := signing.PublicKey()
	if err != nil {
		return plc.State{}, err
	}
	return plc.State{
		RotationKeys:        []string{rot.DIDKey()},
		VerificationMethods: map[string]string{KeyFragment: sig.DIDKey()},
		Services:            map[string]plc.Service{ServiceFragment: {Type: ServiceType, Endpoint: url}},
	}, nil
}

// start runs the server with l.run; l.mu must not be held.
func (l *Labeler) start() error {
	p, url, err := startProcess(l.run, StartTimeout)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.proc, l.URL = p, url
	l.mu.Unlock()
	return nil
}

// Stop stops the server, closing its subscribers' connections; its
// database, DID and port stay for Restart. Idempotent; Start arranges a
// Stop when the test ends.
func (l *Labeler) Stop() {
	l.mu.Lock()
	p := l.proc
	l.mu.Unlock()
	if p != nil {
		p.stop()
	}
}

// Restart stops the server if it runs and starts it again with the same
// DID, key, port and database: subscribers are disconnected, and find the
// labels emitted so far when they reconnect with a cursor.
func (l *Labeler) Restart(t testing.TB) {
	t.Helper()
	l.Stop()
	if err := l.start(); err != nil {
		t.Fatalf("reflabeler: restart %s: %v", l.DID, err)
	}
}

// RotateKey gives the labeler a new signing key: the DID document's
// #atproto_label becomes its public key (a PLC operation signed with the
// rotation key) and the server restarts signing with it. Labels emitted
// before keep their signatures by the old key.
func (l *Labeler) RotateKey(t testing.TB) {
	t.Helper()
	key, err := atcrypto.GeneratePrivateKeyK256()
	if err != nil {
		t.Fatalf("reflabeler: %v", err)
	}
	st, err := l.state(fmt.Sprintf("http://127.0.0.1:%d", l.run.port), key)
	if err != nil {
		t.Fatalf("reflabeler: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), RequestTimeout)
	defer cancel()
	head, err := l.plc.Head(ctx, l.DID)
	if err != nil {
		t.Fatalf("reflabeler: rotate key of %s: %v", l.DID, err)
	}
	op := st.Next(head)
	if err := op.Sign(l.RotationKey); err != nil {
		t.Fatalf("reflabeler: %v", err)
	}
	if err := l.plc.Submit(ctx, l.DID, op); err != nil {
		t.Fatalf("reflabeler: rotate key of %s: %v", l.DID, err)
	}
	l.Stop()
	l.SigningKey, l.run.signingKey = key, key
	if err := l.start(); err != nil {
		t.Fatalf("reflabeler: restart %s with its new key: %v", l.DID, err)
	}
}

// freePort is a TCP port free on 127.0.0.1 right now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
