package reflabeler_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	comatproto "github.com/bluesky-social/indigo/api/atproto"
	"github.com/bluesky-social/indigo/atproto/atcrypto"
	"github.com/bluesky-social/indigo/atproto/atdata"
	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/labeling"
	"github.com/bluesky-social/indigo/atproto/syntax"
	"github.com/coder/websocket"
	cbg "github.com/whyrusleeping/cbor-gen"

	"github.com/lexview/lexview/appview/internal/testing/reflabeler"
	"github.com/lexview/lexview/appview/internal/testing/refpds"
)

// TestLabelerEndToEnd checks the harness the way a consumer sees it:
// resolve the DID at the PLC directory, subscribe at the endpoint it names,
// decode the frames with indigo and verify each label with the key it names.
func TestLabelerEndToEnd(t *testing.T) {
	reflabeler.Require(t)
	n := refpds.Start(t)
	l := reflabeler.Start(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	ident := resolve(ctx, t, n, l.DID)
	if svc := ident.Services[reflabeler.ServiceFragment]; svc.Type != reflabeler.ServiceType || svc.URL != l.URL {
		t.Fatalf("#%s in the DID document = %+v, want type %s at %s", reflabeler.ServiceFragment, svc, reflabeler.ServiceType, l.URL)
	}
	key := labelKey(t, ident)
	if want := mustPublic(t, l.SigningKey).DIDKey(); key.DIDKey() != want {
		t.Fatalf("#%s = %s, want %s", reflabeler.KeyFragment, key.DIDKey(), want)
	}

	alice := n.CreateAccount(t, "alice")
	uri, cid := alice.CreateRecord(t, "com.example.note", map[string]any{"text": "hello"})

	// No label yet: any cursor above 0 is in the future.
	early := subscribe(ctx, t, l.URL, "1")
	if f := early.next(t); f.err == nil || f.err.Error != "FutureCursor" {
		t.Fatalf("cursor 1 on an empty labeler: frame %+v, want a FutureCursor error", f)
	}
	early.close()

	// Emitted before anyone listens: replayed from cursor 0.
	first := l.Label(t, uri, "spam")
	if first.Seq != 1 || first.Src != l.DID || first.URI != uri || first.Val != "spam" || first.Neg || first.Exp != "" {
		t.Fatalf("first label = %+v", first)
	}
	sub := subscribe(ctx, t, ident.GetServiceEndpoint(reflabeler.ServiceFragment), "0")
	checkLabel(t, sub.next(t), key, first)

	// Live: a negation, a label on a record version, one on an account
	// with an expiry.
	neg := l.Negate(t, uri, "spam")
	checkLabel(t, sub.next(t), key, neg)
	versioned := l.Emit(t, reflabeler.Spec{URI: uri, CID: cid, Val: "nudity"})
	checkLabel(t, sub.next(t), key, versioned)
	exp := time.Now().Add(time.Hour)
	expiring := l.LabelExpiring(t, alice.DID, "warn", exp)
	if expiring.Exp != exp.UTC().Format("2006-01-02T15:04:05.000Z") {
		t.Fatalf("exp = %q, want %v", expiring.Exp, exp.UTC())
	}
	checkLabel(t, sub.next(t), key, expiring)
	sub.close()

	// A cursor replays only what came after it, then goes on live.
	sub = subscribe(ctx, t, l.URL, fmt.Sprint(neg.Seq))
	checkLabel(t, sub.next(t), key, versioned)
	checkLabel(t, sub.next(t), key, expiring)
	later := l.Label(t, alice.DID, "spam")
	checkLabel(t, sub.next(t), key, later)

	// Without a cursor: live labels only.
	live := subscribe(ctx, t, l.URL, "")
	last := waitSubscribed(t, l, live, sub, key)

	// A cursor past the end is refused with an error frame.
	future := subscribe(ctx, t, l.URL, "1000")
	if f := future.next(t); f.err == nil || f.err.Error != "FutureCursor" {
		t.Fatalf("cursor 1000: frame %+v, want a FutureCursor error", f)
	}
	future.close()
	live.close()

	// A restart keeps the history and its sequence numbers; the connection
	// is dropped.
	l.Restart(t)
	if r, ok := sub.wait(15 * time.Second); !ok || r.err == nil {
		t.Fatalf("subscription still open after the labeler restarted (frame %+v)", r.f)
	}
	sub = subscribe(ctx, t, l.URL, fmt.Sprint(last.Seq-1))
	checkLabel(t, sub.next(t), key, last)
	afterRestart := l.Label(t, uri, "spam")
	if afterRestart.Seq != last.Seq+1 {
		t.Fatalf("seq after restart = %d, want %d", afterRestart.Seq, last.Seq+1)
	}
	checkLabel(t, sub.next(t), key, afterRestart)
	sub.close()

	// A new signing key: the DID document names it, new labels are signed
	// with it, old ones keep the old signature.
	oldKey := key
	l.RotateKey(t)
	key = labelKey(t, resolve(ctx, t, n, l.DID))
	if key.DIDKey() == oldKey.DIDKey() || key.DIDKey() != mustPublic(t, l.SigningKey).DIDKey() {
		t.Fatalf("#%s after RotateKey = %s (before %s)", reflabeler.KeyFragment, key.DIDKey(), oldKey.DIDKey())
	}
	rotated := l.Label(t, uri, "rotated")
	sub = subscribe(ctx, t, l.URL, fmt.Sprint(afterRestart.Seq-1))
	checkLabel(t, sub.next(t), oldKey, afterRestart)
	f := sub.next(t)
	checkLabel(t, f, key, rotated)
	if lbl := labeling.FromLexicon(f.labels[0]); lbl.VerifySignature(oldKey) == nil {
		t.Fatal("a label signed after RotateKey verifies with the old key")
	}
	sub.close()
}

func resolve(ctx context.Context, t *testing.T, n *refpds.Network, did string) *identity.Identity {
	t.Helper()
	dir := identity.BaseDirectory{PLCURL: n.PLCURL, HTTPClient: *n.HTTP}
	ident, err := dir.LookupDID(ctx, syntax.DID(did))
	if err != nil {
		t.Fatalf("resolve %s: %v", did, err)
	}
	return ident
}

func labelKey(t *testing.T, ident *identity.Identity) atcrypto.PublicKey {
	t.Helper()
	key, err := ident.GetPublicKey(reflabeler.KeyFragment)
	if err != nil {
		t.Fatalf("#%s of %s: %v", reflabeler.KeyFragment, ident.DID, err)
	}
	return key
}

func mustPublic(t *testing.T, k *atcrypto.PrivateKeyK256) atcrypto.PublicKey {
	t.Helper()
	pub, err := k.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

// waitSubscribed checks that live, connected without a cursor, receives no
// history: the first label it gets is one emitted after it connected. The
// server registers a subscriber asynchronously after the handshake, so
// probes are emitted until live receives one (other receives them all).
// It returns the last probe.
func waitSubscribed(t *testing.T, l *reflabeler.Labeler, live, other *subscription, key atcrypto.PublicKey) reflabeler.Label {
	t.Helper()
	var probes []reflabeler.Label
	for i := 0; i < 20; i++ {
		probes = append(probes, l.Label(t, fmt.Sprintf("did:plc:probe%019d", i), "probe"))
		checkLabel(t, other.next(t), key, probes[i])
		r, ok := live.wait(300 * time.Millisecond)
		if !ok {
			continue
		}
		if r.err != nil {
			t.Fatalf("subscription without cursor: %v", r.err)
		}
		for _, p := range probes {
			if p.Seq == r.f.seq {
				checkLabel(t, r.f, key, p)
				return probes[len(probes)-1]
			}
		}
		t.Fatalf("subscription without cursor got label %d first, want one of the probes emitted after it connected", r.f.seq)
	}
	t.Fatal("subscription without cursor: no label after 20 probes")
	return reflabeler.Label{}
}

// checkLabel checks that f is a #labels frame carrying exactly want, signed
// with key.
func checkLabel(t *testing.T, f frame, key atcrypto.PublicKey, want reflabeler.Label) {
	t.Helper()
	if f.err != nil {
		t.Fatalf("error frame %s: %s, want label %d", f.err.Error, f.err.Message, want.Seq)
	}
	if f.seq != want.Seq || len(f.labels) != 1 {
		t.Fatalf("frame seq %d with %d labels, want seq %d with one label", f.seq, len(f.labels), want.Seq)
	}
	lbl := labeling.FromLexicon(f.labels[0])
	if err := lbl.VerifySyntax(); err != nil {
		t.Fatalf("label %d: %v", f.seq, err)
	}
	if err := lbl.VerifySignature(key); err != nil {
		t.Fatalf("label %d: signature does not verify with %s: %v", f.seq, key.DIDKey(), err)
	}
	got := reflabeler.Label{
		Seq: f.seq, Src: lbl.SourceDID, URI: lbl.URI, Val: lbl.Val, Cts: lbl.CreatedAt,
		CID: deref(lbl.CID), Exp: deref(lbl.ExpiresAt), Neg: lbl.Negated != nil && *lbl.Negated,
	}
	if got != want {
		t.Fatalf("label on the wire = %+v\nwant %+v", got, want)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// subscription is a com.atproto.label.subscribeLabels connection, read in
// the background.
type subscription struct {
	conn   *websocket.Conn
	frames chan result // closed after the first read error
}

type result struct {
	f   frame
	err error
}

// frame is a decoded event-stream frame: labels or an error.
type frame struct {
	seq    int64
	labels []*comatproto.LabelDefs_Label
	err    *errorFrame
}

// errorFrame is the body of an error frame (op -1).
type errorFrame struct {
	Error, Message string
}

func subscribe(ctx context.Context, t *testing.T, endpoint, cursor string) *subscription {
	t.Helper()
	u := strings.Replace(strings.TrimSuffix(endpoint, "/"), "http", "ws", 1) + "/xrpc/com.atproto.label.subscribeLabels"
	if cursor != "" {
		u += "?" + url.Values{"cursor": {cursor}}.Encode()
	}
	conn, _, err := websocket.Dial(ctx, u, nil)
	if err != nil {
		t.Fatalf("subscribe %s: %v", u, err)
	}
	conn.SetReadLimit(1 << 20)
	s := &subscription{conn: conn, frames: make(chan result, 64)}
	go func() {
		defer close(s.frames)
		for {
			f, err := read(ctx, conn)
			s.frames <- result{f, err}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(s.close)
	return s
}

func (s *subscription) close() { _ = s.conn.CloseNow() }

// next returns the next frame; anything else fails the test.
func (s *subscription) next(t *testing.T) frame {
	t.Helper()
	r, ok := s.wait(15 * time.Second)
	if !ok {
		t.Fatal("no frame on the label stream after 15s")
	}
	if r.err != nil {
		t.Fatalf("reading the label stream: %v", r.err)
	}
	return r.f
}

// wait returns the next frame or read error, or false after d.
func (s *subscription) wait(d time.Duration) (result, bool) {
	select {
	case r, ok := <-s.frames:
		if !ok {
			return result{err: errors.New("connection closed")}, true
		}
		return r, true
	case <-time.After(d):
		return result{}, false
	}
}

// read reads and decodes one frame with indigo's event-stream types.
func read(ctx context.Context, conn *websocket.Conn) (frame, error) {
	typ, data, err := conn.Read(ctx)
	if err != nil {
		return frame{}, err
	}
	if typ != websocket.MessageBinary {
		return frame{}, fmt.Errorf("a %v message, want binary", typ)
	}
	// A frame is two DAG-CBOR objects: the header {op, t}, then the body.
	r := bytes.NewReader(data)
	var raw cbg.Deferred
	if err := raw.UnmarshalCBOR(r); err != nil {
		return frame{}, fmt.Errorf("frame header: %w", err)
	}
	h, err := atdata.UnmarshalCBOR(raw.Raw)
	if err != nil {
		return frame{}, fmt.Errorf("frame header: %w", err)
	}
	op, _ := h["op"].(int64)
	msgType, _ := h["t"].(string)
	switch {
	case op == -1:
		rest, err := io.ReadAll(r)
		if err != nil {
			return frame{}, err
		}
		body, err := atdata.UnmarshalCBOR(rest)
		if err != nil {
			return frame{}, fmt.Errorf("error frame: %w", err)
		}
		e := &errorFrame{}
		e.Error, _ = body["error"].(string)
		e.Message, _ = body["message"].(string)
		return frame{err: e}, nil
	case op == 1 && msgType == "#labels":
		var body comatproto.LabelSubscribeLabels_Labels
		if err := body.UnmarshalCBOR(r); err != nil {
			return frame{}, fmt.Errorf("#labels frame: %w", err)
		}
		return frame{seq: body.Seq, labels: body.Labels}, nil
	default:
		return frame{}, fmt.Errorf("unexpected frame op %d type %q", op, msgType)
	}
}
