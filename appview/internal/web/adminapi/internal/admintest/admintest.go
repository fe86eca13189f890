// Package admintest serves one admin handler module for tests: the real
// admin mux and permission gate, the real services over a real store,
// callers authenticated by admin API keys, and a scripted stand-in for the
// script runtime, which is a dependency the services consume, not
// storage.
package admintest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/deadletters"
	"github.com/lexview/lexview/appview/internal/service/scripts"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
)

// Server is a running admin API with one or more mounted modules.
type Server struct {
	URL   string
	Store storage.Store
	World *World
	// Super is the super user, calling with an API key.
	Super *Caller
}

// World is what the services of a test are built from.
type World struct {
	Store  storage.Store
	Events *eventlog.Log
	// Sealer seals secrets at rest; nil means token encryption is off.
	Sealer *oauth.Sealer
	// Runtime stands in for the script runtime; nil means the instance
	// runs no script machinery.
	Runtime *Runtime
	Logger  *slog.Logger
}

// runtime is Runtime as an interface value: nil when there is none.
func (w *World) runtime() interface {
	scripts.Runtime
	scripts.VarsInvalidator
	deadletters.Runtime
} {
	if w.Runtime == nil {
		return nil
	}
	return w.Runtime
}

// Scripts is the scripts service of the world.
func (w *World) Scripts() *scripts.Service {
	return scripts.New(scripts.Options{Store: w.Store, Runtime: w.runtime(), Events: w.Events, Logger: w.Logger})
}

// Variables is the script-variables service of the world.
func (w *World) Variables() *scripts.Variables {
	return scripts.NewVariables(scripts.VariablesOptions{Store: w.Store, Sealer: w.Sealer, Runtime: w.runtime(), Events: w.Events})
}

// DeadLetters is the dead-letter service of the world.
func (w *World) DeadLetters() *deadletters.Service {
	return deadletters.New(deadletters.Options{Store: w.Store, Runtime: w.runtime(), Events: w.Events, Logger: w.Logger})
}

// New serves the modules mounted by mount on store. configure, when not
// nil, adjusts the World first (a nil Runtime or Sealer, for example); by
// default Runtime is a fresh *Runtime and Sealer a random-key Sealer.
func New(t testing.TB, store storage.Store, mount func(*adminapi.Mux, *World), configure func(*World)) *Server {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	key := make([]byte, oauth.KeySize)
	for i := range key {
		key[i] = byte(i + 1)
	}
	sealer, err := oauth.NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	events := eventlog.New(eventlog.Options{Store: store, Logger: log})
	w := &World{Store: store, Events: events, Sealer: sealer, Runtime: &Runtime{}, Logger: log}
	if configure != nil {
		configure(w)
	}
	svc := admins.New(admins.Options{Store: store, Events: events, Claim: admins.ClaimPolicy{FirstRequest: true}, Logger: log})
	m := adminapi.NewMux(adminapi.NewAuthenticator(adminapi.AuthenticatorOptions{Admins: svc, Logger: log}), log)
	mount(m, w)
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	s := &Server{URL: srv.URL, Store: store, World: w}
	s.Super = s.newCaller(t, true, admins.All()...)
	return s
}

// Caller calls the admin API with an admin API key.
type Caller struct {
	DID string
	key string
	srv *Server
}

// Caller adds an ordinary admin user holding exactly perms, with an API
// key holding the same.
func (s *Server) Caller(t testing.TB, perms ...admins.Permission) *Caller {
	t.Helper()
	return s.newCaller(t, false, perms...)
}

func (s *Server) newCaller(t testing.TB, super bool, perms ...admins.Permission) *Caller {
	t.Helper()
	names := make([]string, len(perms))
	for i, p := range perms {
		names[i] = string(p)
	}
	ctx := context.Background()
	u := storage.AdminUser{ID: storage.NewID(), DID: "did:plc:" + strings.ToLower(storage.NewID()), IsSuper: super,
		Permissions: names, CreatedAt: time.Now()}
	if super {
		if ok, err := s.Store.BootstrapSuperUser(ctx, u); err != nil || !ok {
			t.Fatalf("bootstrap super user: %v %v", ok, err)
		}
	} else if err := s.Store.CreateAdminUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	secret := admins.KeyPrefix + strings.ReplaceAll(storage.NewID()+storage.NewID(), "-", "")
	err := s.Store.CreateAdminAPIKey(ctx, storage.AdminAPIKey{
		ID: storage.NewID(), UserID: u.ID, Name: "test", Prefix: secret[:8], Hash: admins.HashKey(secret),
		Permissions: names, CreatedAt: time.Now(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return &Caller{DID: u.DID, key: secret, srv: s}
}

// Do sends a request as the caller. body is JSON-encoded unless it is
// []byte or nil.
func (c *Caller) Do(t testing.TB, method, path string, body any) Response {
	t.Helper()
	return testenv.Request(t, method, c.srv.URL+path, body, "Authorization", "Bearer "+c.key)
}

// Response is a decoded HTTP answer (the test environment's type, so the
// two harnesses share its helpers).
type Response = testenv.Response

// Expect fails the test unless r has status and, when msg is not "", the
// error message msg.
func Expect(t testing.TB, r Response, status int, msg string) {
	t.Helper()
	if r.Status != status || (msg != "" && r.Error(t) != msg) {
		t.Fatalf("got %d %s, want %d %q", r.Status, r.Raw, status, msg)
	}
}

// Events returns the event-log entries of category, newest first.
func (s *Server) Events(t testing.TB, category string) []storage.Event {
	t.Helper()
	list, _, err := s.Store.ListEvents(context.Background(), storage.EventFilter{Category: category, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// Runtime is a scripted script runtime. Its zero value accepts every
// source and succeeds at everything.
type Runtime struct {
	mu sync.Mutex
	// SyntaxError, when a source contains it, makes Check fail with it.
	SyntaxError string
	// ReloadErr is returned by Reload.
	ReloadErr error
	// Fail maps a dead letter ID to the error its retry and reindex
	// return (scripting.ErrNoScript included).
	Fail map[string]error
	// Reloads counts Reload calls, invalidations InvalidateVars calls;
	// Retried and Reindexed list the dead letters handled, in order.
	Reloads       int
	invalidations int
	Retried       []string
	Reindexed     []string
}

// Check implements the services' Runtime.
func (rt *Runtime) Check(source string) error {
	if rt.SyntaxError != "" && strings.Contains(source, rt.SyntaxError) {
		return errors.New(rt.SyntaxError)
	}
	return nil
}

// Reload implements the services' Runtime.
func (rt *Runtime) Reload(context.Context) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.Reloads++
	return rt.ReloadErr
}

// InvalidateVars implements scripts.VarsInvalidator.
func (rt *Runtime) InvalidateVars() {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.invalidations++
}

// Invalidations returns the number of InvalidateVars calls.
func (rt *Runtime) Invalidations() int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.invalidations
}

// RetryDeadLetter implements the services' Runtime.
func (rt *Runtime) RetryDeadLetter(_ context.Context, d storage.DeadLetter) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.Retried = append(rt.Retried, d.ID)
	return rt.Fail[d.ID]
}

// ReindexDeadLetter implements the services' Runtime.
func (rt *Runtime) ReindexDeadLetter(_ context.Context, d storage.DeadLetter) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.Reindexed = append(rt.Reindexed, d.ID)
	return rt.Fail[d.ID]
}

// SetFail makes the retry and reindex of the dead letter id fail with err
// (nil clears it).
func (rt *Runtime) SetFail(id string, err error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.Fail == nil {
		rt.Fail = map[string]error{}
	}
	if err == nil {
		delete(rt.Fail, id)
		return
	}
	rt.Fail[id] = err
}

// Counts returns the Reload, retry and reindex call counts.
func (rt *Runtime) Counts() (reloads, retried, reindexed int) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.Reloads, len(rt.Retried), len(rt.Reindexed)
}
