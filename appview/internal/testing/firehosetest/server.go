package firehosetest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"

	comatproto "github.com/bluesky-social/indigo/api/atproto"
	"github.com/bluesky-social/indigo/atproto/atcrypto"
	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"
	"github.com/coder/websocket"
	cbg "github.com/whyrusleeping/cbor-gen"

	"github.com/lexview/lexview/appview/internal/core/streamframe"
)

// Server is a stand-in subscribeRepos endpoint on 127.0.0.1: it numbers
// the events published (seq 1, 2, ...), serves those after a
// subscription's cursor, then the new ones as they come.
type Server struct {
	*httptest.Server

	mu      sync.Mutex
	frames  [][]byte // frames[i] has seq i+1
	wake    chan struct{}
	cursors []int64 // the cursor of each subscription (-1: none)
}

// NewServer starts a server; Close stops it.
func NewServer() *Server {
	s := &Server{wake: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Cursors returns the cursor of each subscription so far (-1: none).
func (s *Server) Cursors() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.cursors...)
}

// Len is the number of events published.
func (s *Server) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.frames)
}

// Publish numbers an event (it sets evt's Seq), encodes it and makes it
// available to subscribers; it returns the seq. evt is a #commit, #sync,
// #identity or #account body of comatproto.
func (s *Server) Publish(evt cbg.CBORMarshaler) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	seq := int64(len(s.frames) + 1)
	var t string
	switch e := evt.(type) {
	case *comatproto.SyncSubscribeRepos_Commit:
		e.Seq, t = seq, "#commit"
	case *comatproto.SyncSubscribeRepos_Sync:
		e.Seq, t = seq, "#sync"
	case *comatproto.SyncSubscribeRepos_Identity:
		e.Seq, t = seq, "#identity"
	case *comatproto.SyncSubscribeRepos_Account:
		e.Seq, t = seq, "#account"
	default:
		panic("firehosetest: unknown event type")
	}
	frame, err := streamframe.Encode(t, evt)
	if err != nil {
		panic(err)
	}
	s.frames = append(s.frames, frame)
	close(s.wake)
	s.wake = make(chan struct{})
	return seq
}

// PublishRaw makes a frame as given available to subscribers (it takes
// the next seq, which the frame itself may not carry).
func (s *Server) PublishRaw(frame []byte) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.frames = append(s.frames, frame)
	close(s.wake)
	s.wake = make(chan struct{})
	return int64(len(s.frames))
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/xrpc/com.atproto.sync.subscribeRepos" {
		http.NotFound(w, r)
		return
	}
	cursor := int64(-1)
	if v := r.URL.Query().Get("cursor"); v != "" {
		cursor, _ = strconv.ParseInt(v, 10, 64)
	}
	s.mu.Lock()
	s.cursors = append(s.cursors, cursor)
	next := len(s.frames) // live: from the next event
	if cursor >= 0 {
		next = int(min(cursor, int64(len(s.frames))))
	}
	s.mu.Unlock()
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer conn.CloseNow()
	ctx := conn.CloseRead(r.Context())
	for {
		s.mu.Lock()
		pending := s.frames[next:]
		wake := s.wake
		s.mu.Unlock()
		for _, f := range pending {
			if err := conn.Write(ctx, websocket.MessageBinary, f); err != nil {
				return
			}
			next++
		}
		if len(pending) > 0 {
			continue
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return
		}
	}
}

// Directory is an identity.Directory of test accounts that caches like a
// real one: a key published after a lookup is seen only once the DID is
// purged.
type Directory struct {
	mu        sync.Mutex
	published map[string]string // DID -> public key multibase
	cached    map[string]string
	lookups   int
}

// NewDirectory returns an empty directory.
func NewDirectory() *Directory {
	return &Directory{published: map[string]string{}, cached: map[string]string{}}
}

// Publish sets the #atproto key of did's DID document.
func (d *Directory) Publish(did string, key atcrypto.PrivateKey) {
	pub, err := key.PublicKey()
	if err != nil {
		panic(err)
	}
	d.mu.Lock()
	d.published[did] = pub.Multibase()
	d.mu.Unlock()
}

// Lookups is the number of DID documents fetched (cache misses).
func (d *Directory) Lookups() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lookups
}

// LookupDID implements identity.Directory.
func (d *Directory) LookupDID(_ context.Context, did syntax.DID) (*identity.Identity, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	key, ok := d.cached[did.String()]
	if !ok {
		if key, ok = d.published[did.String()]; !ok {
			return nil, identity.ErrDIDNotFound
		}
		d.cached[did.String()] = key
		d.lookups++
	}
	return &identity.Identity{DID: did, Keys: map[string]identity.VerificationMethod{
		"atproto": {Type: "Multikey", PublicKeyMultibase: key},
	}}, nil
}

// LookupHandle implements identity.Directory; handles are not known.
func (d *Directory) LookupHandle(context.Context, syntax.Handle) (*identity.Identity, error) {
	return nil, identity.ErrHandleNotFound
}

// Lookup implements identity.Directory.
func (d *Directory) Lookup(ctx context.Context, a syntax.AtIdentifier) (*identity.Identity, error) {
	if did, err := a.AsDID(); err == nil {
		return d.LookupDID(ctx, did)
	}
	return nil, identity.ErrHandleNotFound
}

// Purge implements identity.Directory: the next lookup fetches the
// document again.
func (d *Directory) Purge(_ context.Context, a syntax.AtIdentifier) error {
	d.mu.Lock()
	delete(d.cached, a.String())
	d.mu.Unlock()
	return nil
}
