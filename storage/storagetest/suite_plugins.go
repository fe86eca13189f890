package storagetest

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

// RunPlugins runs the suite for installed plugins and their sealed
// secrets (PluginStore). Each subtest gets a fresh store.
func RunPlugins(t *testing.T, open func(t testing.TB) storage.Store) {
	tests := []storeCase{
		{"Plugins", testPlugins},
		{"Secrets", testPluginSecrets},
		{"Accounts", testPluginAccounts},
	}
	runCases(t, open, tests)
}

func testPlugins(t *testing.T, s storage.Store) {
	ctx := context.Background()
	if _, err := s.GetPlugin(ctx, "none"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("GetPlugin absent: %v", err)
	}
	installed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	wasm := []byte{0, 'a', 's', 'm', 0xff, 0}
	p := storage.Plugin{ID: "word-filter", URL: "https://x.example/m.json", SHA256: "ab12", Manifest: []byte(`{"id":"word-filter"}`),
		WASM: wasm, Enabled: true, InstalledAt: installed, UpdatedAt: installed}
	if err := s.PutPlugin(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := s.PutPlugin(ctx, storage.Plugin{ID: "a-first", URL: "u", Manifest: []byte(`{}`), WASM: []byte{1}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetPlugin(ctx, "word-filter")
	if err != nil || got.URL != p.URL || got.SHA256 != "ab12" || !bytes.Equal(got.WASM, wasm) || string(got.Manifest) != `{"id":"word-filter"}` ||
		!got.Enabled || !got.InstalledAt.Equal(installed) || !got.UpdatedAt.Equal(installed) {
		t.Fatalf("GetPlugin: %+v %v", got, err)
	}
	// Replace: a new URL without a pin; InstalledAt stays.
	later := installed.Add(time.Hour)
	if err := s.PutPlugin(ctx, storage.Plugin{ID: "word-filter", URL: "https://y.example/m.json", Manifest: []byte(`{"v":2}`),
		WASM: []byte{2}, Enabled: false, InstalledAt: later, UpdatedAt: later}); err != nil {
		t.Fatal(err)
	}
	got, err = s.GetPlugin(ctx, "word-filter")
	if err != nil || got.URL != "https://y.example/m.json" || got.SHA256 != "" || got.Enabled || !got.InstalledAt.Equal(installed) || !got.UpdatedAt.Equal(later) {
		t.Fatalf("replaced: %+v %v", got, err)
	}
	list, err := s.ListPlugins(ctx)
	if err != nil || len(list) != 2 || list[0].ID != "a-first" || list[1].ID != "word-filter" || list[0].InstalledAt.IsZero() {
		t.Fatalf("ListPlugins: %+v %v", list, err)
	}
	if err := s.DeletePlugin(ctx, "a-first"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeletePlugin(ctx, "a-first"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
	if list, _ := s.ListPlugins(ctx); len(list) != 1 {
		t.Fatalf("after delete: %+v", list)
	}
}

func testPluginSecrets(t *testing.T, s storage.Store) {
	ctx := context.Background()
	if err := s.PutPlugin(ctx, storage.Plugin{ID: "p", URL: "u", Manifest: []byte(`{}`), WASM: []byte{1}}); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdatePluginSecrets(ctx, "p", []storage.PluginSecret{{Key: "b", Sealed: "sealed-b"}, {Key: "a", Sealed: "sealed-a"}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdatePluginSecrets(ctx, "other", []storage.PluginSecret{{Key: "a", Sealed: "other-a"}}, nil); err != nil {
		t.Fatal(err)
	}
	keys := func(id string) map[string]string {
		t.Helper()
		list, err := s.ListPluginSecrets(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for i, x := range list {
			if x.PluginID != id || x.UpdatedAt.IsZero() || (i > 0 && list[i-1].Key >= x.Key) {
				t.Fatalf("secret row: %+v", list)
			}
			out[x.Key] = x.Sealed
		}
		return out
	}
	if got := keys("p"); len(got) != 2 || got["a"] != "sealed-a" || got["b"] != "sealed-b" {
		t.Fatalf("secrets: %v", got)
	}
	// Replace one, clear one (and one that never existed), in one go.
	if err := s.UpdatePluginSecrets(ctx, "p", []storage.PluginSecret{{Key: "a", Sealed: "sealed-a2"}}, []string{"b", "never"}); err != nil {
		t.Fatal(err)
	}
	if got := keys("p"); len(got) != 1 || got["a"] != "sealed-a2" {
		t.Fatalf("after update: %v", got)
	}
	// Deleting the plugin keeps its secrets.
	if err := s.DeletePlugin(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if got := keys("p"); len(got) != 1 {
		t.Fatalf("secrets after plugin delete: %v", got)
	}
	if got := keys("other"); len(got) != 1 || got["a"] != "other-a" {
		t.Fatalf("other plugin: %v", got)
	}
}

func testPluginAccounts(t *testing.T, s storage.Store) {
	ctx := context.Background()
	if _, err := s.GetPluginAccount(ctx, "demo", "did:plc:a"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("GetPluginAccount absent: %v", err)
	}
	if err := s.DeletePluginAccount(ctx, "demo", "did:plc:a"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("DeletePluginAccount absent: %v", err)
	}
	connected := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := storage.PluginAccount{PluginID: "demo", DID: "did:plc:a", SessionID: "s1", ExternalID: "ext-1", ExternalName: "Ann",
		SealedTokens: "sealed-1", ConnectedAt: connected, UpdatedAt: connected}
	if err := s.PutPluginAccount(ctx, a); err != nil {
		t.Fatal(err)
	}
	other := a
	other.DID, other.SealedTokens = "did:plc:b", "sealed-b"
	if err := s.PutPluginAccount(ctx, other); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetPluginAccount(ctx, "demo", "did:plc:a")
	if err != nil || got.SealedTokens != "sealed-1" || got.ExternalName != "Ann" || got.SessionID != "s1" ||
		!got.ConnectedAt.Equal(connected) || !got.LastSyncAt.IsZero() || got.Cursor != "" {
		t.Fatalf("GetPluginAccount: %+v %v", got, err)
	}
	// Replacing keeps ConnectedAt and stores the cursor and sync time.
	later := connected.Add(time.Hour)
	a.ConnectedAt, a.UpdatedAt, a.LastSyncAt, a.Cursor, a.SealedTokens = later, later, later, "c2", "sealed-2"
	if err := s.PutPluginAccount(ctx, a); err != nil {
		t.Fatal(err)
	}
	got, err = s.GetPluginAccount(ctx, "demo", "did:plc:a")
	if err != nil || got.SealedTokens != "sealed-2" || got.Cursor != "c2" || !got.ConnectedAt.Equal(connected) ||
		!got.UpdatedAt.Equal(later) || !got.LastSyncAt.Equal(later) {
		t.Fatalf("after replace: %+v %v", got, err)
	}
	if err := s.DeletePluginAccount(ctx, "demo", "did:plc:a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetPluginAccount(ctx, "demo", "did:plc:a"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if got, err := s.GetPluginAccount(ctx, "demo", "did:plc:b"); err != nil || got.SealedTokens != "sealed-b" {
		t.Fatalf("other user's account: %+v %v", got, err)
	}
}
