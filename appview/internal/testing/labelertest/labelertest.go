// Package labelertest runs a stand-in labeler for tests: an HTTP server on
// 127.0.0.1 speaking com.atproto.label.subscribeLabels over WebSocket in
// the real wire format (event-stream frames of a CBOR header and a CBOR
// body), with labels signed by indigo's atproto/labeling under a real
// P-256 or secp256k1 key. It replays its log from a client's cursor, then
// streams what is emitted live, and can misbehave on request: drop
// connections, sign badly, send error frames, malformed or oversized
// frames, or refuse connections.
package labelertest

import (
	"crypto/rand"
	"encoding/base32"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/bluesky-social/indigo/atproto/atcrypto"
	"github.com/bluesky-social/indigo/atproto/labeling"
	"github.com/bluesky-social/indigo/atproto/syntax"
	"github.com/coder/websocket"
)

// Registrar publishes a labeler's DID document: its #atproto_labeler
// service endpoint and its #atproto_label key (a multibase public key).
// testenv.PLC implements it.
type Registrar interface {
	RegisterLabeler(did, endpoint, keyMultibase string)
}

// Options configure a stand-in.
type Options struct {
	K256 bool // sign with secp256k1 rather than P-256
}

// Server is a stand-in labeler.
type Server struct {
	DID string
	URL string // the service endpoint, http://127.0.0.1:port

	reg  Registrar
	k256 bool
	srv  *httptest.Server
	stop chan struct{}

	mu      sync.Mutex
	key     atcrypto.PrivateKeyExportable
	seq     int64
	log     []entry
	wake    chan struct{} // closed when the log grows
	conns   map[*websocket.Conn]bool
	cursors []int64
	refuse  []byte // an error frame sent to every new connection, nil for none
	deaf    bool   // new connections read nothing, so never answer pings
}

// entry is a frame of the log, sent to clients whose cursor is below seq.
type entry struct {
	seq        int64
	frame      []byte
	text       bool // sent as a text message
	closeAfter bool // the connection closes after it (error frames)
	// missed is sent in replays only, never live to a connection open
	// when it was emitted (as @skyware/labeler loses the labels created
	// while a subscriber connects).
	missed bool
}

// Path is the path of the subscription.
const Path = "/xrpc/com.atproto.label.subscribeLabels"

// New starts a stand-in with a fresh did:plc and key, and registers its
// DID document with reg.
func New(t testing.TB, reg Registrar, opts Options) *Server {
	t.Helper()
	s := &Server{DID: NewDID(), reg: reg, k256: opts.K256, stop: make(chan struct{}),
		wake: make(chan struct{}), conns: map[*websocket.Conn]bool{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(func() {
		close(s.stop)
		s.Drop()
		s.srv.Close()
	})
	s.RotateKey(t)
	return s
}

// NewDID returns a random, well-formed did:plc.
func NewDID() string {
	b := make([]byte, 15)
	_, _ = rand.Read(b)
	return "did:plc:" + strings.ToLower(base32.StdEncoding.EncodeToString(b))
}

// RotateKey gives the labeler a new signing key, used for every label
// emitted from now on, and publishes it in its DID document.
func (s *Server) RotateKey(t testing.TB) {
	t.Helper()
	key, err := newKey(s.k256)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := key.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.key = key
	s.mu.Unlock()
	s.reg.RegisterLabeler(s.DID, s.URL, pub.Multibase())
}

func newKey(k256 bool) (atcrypto.PrivateKeyExportable, error) {
	if k256 {
		return atcrypto.GeneratePrivateKeyK256()
	}
	return atcrypto.GeneratePrivateKeyP256()
}

// Key is the labeler's current signing key.
func (s *Server) Key() atcrypto.PrivateKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.key
}

// Label returns a label from this labeler on uri with value val, created
// now; tests set Negated, ExpiresAt or CID on it before emitting it.
func (s *Server) Label(uri, val string) labeling.Label {
	return labeling.Label{SourceDID: s.DID, URI: uri, Val: val, Version: labeling.ATPROTO_LABEL_VERSION,
		CreatedAt: syntax.DatetimeNow().String()}
}

// Emit appends one #labels event carrying labels, each signed with the
// current key unless it has a signature already, and returns its sequence
// number.
func (s *Server) Emit(labels ...labeling.Label) int64 {
	s.mu.Lock()
	key := s.key
	s.mu.Unlock()
	return s.emitSigned(key, labels)
}

// EmitBadSig is Emit with every label signed by a key that is not the
// labeler's.
func (s *Server) EmitBadSig(labels ...labeling.Label) int64 {
	key, err := newKey(s.k256)
	if err != nil {
		panic(err)
	}
	return s.emitSigned(key, labels)
}

func (s *Server) emitSigned(key atcrypto.PrivateKey, labels []labeling.Label) int64 {
	for i := range labels {
		if labels[i].Sig == nil {
			if err := labels[i].Sign(key); err != nil {
				panic(err)
			}
		}
	}
	return s.EmitSigned(labels...)
}

// EmitSigned appends one #labels event carrying labels exactly as given
// (signed or not), and returns its sequence number.
func (s *Server) EmitSigned(labels ...labeling.Label) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	s.appendLocked(entry{seq: s.seq, frame: LabelsFrame(s.seq, labels)})
	return s.seq
}

// EmitMissed is Emit for an event that the open connections miss: only
// a replay (a later connection from a cursor below it) carries it.
func (s *Server) EmitMissed(labels ...labeling.Label) int64 {
	s.mu.Lock()
	key := s.key
	s.mu.Unlock()
	for i := range labels {
		if err := labels[i].Sign(key); err != nil {
			panic(err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	s.appendLocked(entry{seq: s.seq, frame: LabelsFrame(s.seq, labels), missed: true})
	return s.seq
}

// SkipSeq leaves n sequence numbers unused: the next event's is n higher
// than it would be.
func (s *Server) SkipSeq(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq += n
}

// EmitFrame appends a frame as given (a malformed or oversized one),
// sent after the current last event to clients that have not seen it.
func (s *Server) EmitFrame(frame []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.appendLocked(entry{seq: s.seq, frame: frame})
}

// EmitText appends a text message (not a valid event-stream frame).
func (s *Server) EmitText(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.appendLocked(entry{seq: s.seq, frame: []byte(msg), text: true})
}

// EmitError appends an error frame, after which the connection closes.
func (s *Server) EmitError(name, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.appendLocked(entry{seq: s.seq, frame: ErrorFrame(name, message), closeAfter: true})
}

// appendLocked adds e to the log and wakes the connections.
func (s *Server) appendLocked(e entry) {
	s.log = append(s.log, e)
	close(s.wake)
	s.wake = make(chan struct{})
}

// Seq is the sequence number of the last event.
func (s *Server) Seq() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq
}

// Refuse makes every new connection receive an error frame with name
// and message and be closed; an empty name accepts connections again.
func (s *Server) Refuse(name, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = nil
	if name != "" {
		s.refuse = ErrorFrame(name, message)
	}
}

// Deaf makes new connections (deaf true) stream events but never read
// from the client, so that pings go unanswered, like a dead peer's.
func (s *Server) Deaf(deaf bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deaf = deaf
}

// Drop closes every open connection abruptly.
func (s *Server) Drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.CloseNow()
	}
}

// Open is the number of open connections.
func (s *Server) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Cursors lists the cursor of every connection so far, in order (-1 for
// none).
func (s *Server) Cursors() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.cursors...)
}

// serve answers subscribeLabels: it replays the log after the cursor and
// then streams new entries, until the connection or the server closes.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != Path {
		http.NotFound(w, r)
		return
	}
	cursor := int64(-1)
	if c := r.URL.Query().Get("cursor"); c != "" {
		n, err := strconv.ParseInt(c, 10, 64)
		if err != nil || n < 0 {
			http.Error(w, `{"error":"InvalidRequest","message":"bad cursor"}`, http.StatusBadRequest)
			return
		}
		cursor = n
	}
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer conn.CloseNow()
	s.mu.Lock()
	s.cursors = append(s.cursors, cursor)
	s.conns[conn] = true
	refuse, seq, deaf := s.refuse, s.seq, s.deaf
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, conn)
		s.mu.Unlock()
	}()
	ctx := r.Context()
	if !deaf {
		ctx = conn.CloseRead(ctx)
	}
	ctx, cancel := contextUntil(ctx, s.stop)
	defer cancel()
	switch {
	case refuse != nil:
		_ = conn.Write(ctx, websocket.MessageBinary, refuse)
		conn.Close(websocket.StatusNormalClosure, "")
		return
	case cursor > seq:
		_ = conn.Write(ctx, websocket.MessageBinary, ErrorFrame("FutureCursor", "cursor in the future"))
		conn.Close(websocket.StatusNormalClosure, "")
		return
	}
	s.mu.Lock()
	pos := len(s.log)
	if cursor >= 0 {
		// Frames emitted after event N (bad ones) carry seq N: a client
		// at cursor N has had them.
		pos = 0
		for pos < len(s.log) && s.log[pos].seq <= cursor {
			pos++
		}
	}
	live := len(s.log) // entries from here on were emitted while connected
	s.mu.Unlock()
	for {
		s.mu.Lock()
		batch, wake := s.log[pos:], s.wake
		s.mu.Unlock()
		for i, e := range batch {
			if e.missed && pos+i >= live {
				continue
			}
			typ := websocket.MessageBinary
			if e.text {
				typ = websocket.MessageText
			}
			if err := conn.Write(ctx, typ, e.frame); err != nil {
				return
			}
			if e.closeAfter {
				conn.Close(websocket.StatusNormalClosure, "")
				return
			}
		}
		pos += len(batch)
		if len(batch) == 0 {
			select {
			case <-wake:
			case <-ctx.Done():
				return
			}
		}
	}
}
