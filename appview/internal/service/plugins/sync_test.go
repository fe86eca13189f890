package plugins_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/service/plugins"
	"github.com/lexview/lexview/appview/internal/service/plugins/wasm"
	"github.com/lexview/lexview/appview/internal/testing/plugintest"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// stalledStore holds the first ListPlugins that follows arm, with the
// list it read, until release: a Sync that read the store before an
// install and looks at the loaded plugins after it.
type stalledStore struct {
	storage.Store
	mu      sync.Mutex
	armed   bool
	read    chan struct{} // closed once the armed call has read
	release chan struct{}
}

func (s *stalledStore) arm() {
	s.mu.Lock()
	s.armed, s.read, s.release = true, make(chan struct{}), make(chan struct{})
	s.mu.Unlock()
}

func (s *stalledStore) ListPlugins(ctx context.Context) ([]storage.Plugin, error) {
	list, err := s.Store.ListPlugins(ctx)
	s.mu.Lock()
	armed := s.armed
	s.armed = false
	read, release := s.read, s.release
	s.mu.Unlock()
	if armed {
		close(read)
		<-release
	}
	return list, err
}

// TestSyncDuringInstall: a Sync (another instance's change) that lists
// the store just before an install here does not unload the plugin the
// install loaded.
func TestSyncDuringInstall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	manifestURL, _ := plugintest.Serve(t, "examples/plugins/wordfilter")
	rt, err := wasm.New(ctx, wasm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	store := &stalledStore{Store: storagetest.SQLite(t)}
	m := plugins.New(plugins.Options{Store: store, Runtime: rt, Fetch: http.DefaultClient, Plugin: http.DefaultClient})
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })

	store.arm()
	synced := make(chan error, 1)
	go func() { synced <- m.Sync(ctx) }()
	<-store.read // the Sync has read the store: no plugin installed
	installed := make(chan error, 1)
	go func() {
		_, err := m.Install(ctx, "did:plc:admin", manifestURL, "")
		installed <- err
	}()
	// The install must not load the plugin while the Sync runs (without
	// the lock it does, once the module is compiled, and the Sync then
	// unloaded it); the Sync goes on after a while either way.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err := m.Call(ctx, "word-filter", "censor", []byte(`{"text":"oh"}`)); err == nil {
			break
		}
	}
	close(store.release)
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
	if err := <-installed; err != nil {
		t.Fatal(err)
	}
	if _, err := m.Call(ctx, "word-filter", "censor", []byte(`{"text":"oh heck"}`)); err != nil {
		t.Fatalf("the plugin installed during a Sync is not loaded: %v", err)
	}
}
