package oauth_test

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lexview/lexview/internal/oauthtest"
	"github.com/lexview/lexview/oauth"
)

// memSource is an in-memory SessionSource with optimistic versions, shared
// by every Client of a test as a database would be by several instances.
type memSource struct {
	mu       sync.Mutex
	sessions map[string]*oauth.UserSession
	loads    atomic.Int64
	saves    atomic.Int64
	// onLoad, when set, is called before each Load (n counts loads from 1)
	// and may replace the session returned.
	onLoad func(n int64, s *oauth.UserSession) *oauth.UserSession
	// onSave, when set, is called before each save is checked.
	onSave func(n int64)
}

func newMemSource() *memSource { return &memSource{sessions: make(map[string]*oauth.UserSession)} }

func (m *memSource) put(s *oauth.UserSession) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := *s
	m.sessions[s.ID] = &c
}

func (m *memSource) get(id string) oauth.UserSession {
	m.mu.Lock()
	defer m.mu.Unlock()
	return *m.sessions[id]
}

func (m *memSource) Load(ctx context.Context, id string) (*oauth.UserSession, error) {
	n := m.loads.Add(1)
	m.mu.Lock()
	s, ok := m.sessions[id]
	var c oauth.UserSession
	if ok {
		c = *s
	}
	m.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("session %s: %w", id, errNotFound)
	}
	if m.onLoad != nil {
		if r := m.onLoad(n, &c); r != nil {
			c = *r
		}
	}
	return &c, nil
}

var errNotFound = errors.New("not found")

func (m *memSource) SaveTokens(ctx context.Context, s *oauth.UserSession, t oauth.Tokens) (*oauth.UserSession, error) {
	n := m.saves.Add(1)
	if m.onSave != nil {
		m.onSave(n)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.sessions[s.ID]
	if !ok {
		return nil, errNotFound
	}
	if cur.Version != s.Version {
		return nil, fmt.Errorf("session %s: %w", s.ID, oauth.ErrSessionStale)
	}
	next := *cur
	next.AccessToken, next.RefreshToken, next.ExpiresAt, next.Scopes = t.AccessToken, t.RefreshToken, t.ExpiresAt, t.Scopes
	next.Version++
	m.sessions[s.ID] = &next
	c := next
	return &c, nil
}

// fixture is a stand-in PDS, a session source holding one session for
// testDID, and a Client.
type fixture struct {
	srv    *oauthtest.Server
	src    *memSource
	client *oauth.Client
	key    *ecdsa.PrivateKey
	id     string
}

func newFixture(t testing.TB, opts oauthtest.Options) *fixture {
	t.Helper()
	srv := oauthtest.New(t, opts)
	key, err := oauth.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{srv: srv, src: newMemSource(), key: key, id: "sess-1"}
	f.src.put(f.newSession(t, f.id, key))
	f.client = f.newClient()
	return f
}

// newSession signs in testDID on a device with key.
func (f *fixture) newSession(t testing.TB, id string, key *ecdsa.PrivateKey) *oauth.UserSession {
	t.Helper()
	jkt, err := oauth.JWKThumbprint(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	access, refresh := f.srv.IssueTokens(testDID, jkt)
	return &oauth.UserSession{
		ID: id, DID: testDID, PDSURL: f.srv.URL, Issuer: f.srv.URL, ClientID: testClientID,
		AccessToken: access, RefreshToken: refresh, ExpiresAt: time.Now().Add(time.Hour),
		Scopes: "atproto transition:generic", DPoPKey: key, Version: 1,
	}
}

func (f *fixture) newClient() *oauth.Client {
	return oauth.NewClient(f.src, oauth.ClientOptions{HTTPClient: f.srv.Client()})
}

func (f *fixture) create(t testing.TB, text string) (int, []byte, *oauth.WriteResult) {
	t.Helper()
	status, body, res, err := f.client.CreateRecord(context.Background(), f.id, testCollection,
		json.RawMessage(`{"text":"`+text+`"}`), "")
	if err != nil {
		t.Fatal(err)
	}
	return status, body, res
}

// warm makes one successful write so the client knows the nonce.
func (f *fixture) warm(t testing.TB) {
	t.Helper()
	if status, body, _ := f.create(t, "warm"); status != http.StatusOK {
		t.Fatalf("warm-up write: %d %s", status, body)
	}
}
