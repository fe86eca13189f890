package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/plugins/wasm"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
)

// Sources of a plugin.
const (
	SourceURL  = "url"
	SourceFile = "file"
)

// Options configure a Manager.
type Options struct {
	Store   storage.PluginStore
	Runtime *wasm.Runtime
	// Sealer seals secrets; nil when TOKEN_ENCRYPTION_KEY is not
	// configured (secrets can then be neither read nor set).
	Sealer *oauth.Sealer
	// Fetch fetches manifests, modules and the registry index; Plugin
	// makes the plugins' own requests. Both must be guarded clients.
	Fetch, Plugin *http.Client
	Events        *eventlog.Log
	// RegistryURL is the official registry index at start; "" for none
	// (SetRegistryURL changes it).
	RegistryURL string
	// Dir holds file-based plugins: each manifest *.json (or
	// <dir>/manifest.json) with its module beside it. "" for none.
	Dir    string
	Now    func() time.Time
	Logger *slog.Logger
}

// plugin is a loaded plugin.
type plugin struct {
	manifest Manifest
	source   string
	url      string
	sha256   string
	module   *wasm.Module
	loadedAt time.Time

	secretsMu sync.Mutex
	secrets   map[string]string // decrypted, nil until read
}

// Manager keeps the loaded plugins. It is safe for concurrent use.
type Manager struct {
	opt   Options
	fetch fetcher
	reg   *registry

	// storeMu is held while the loaded set and the store change together
	// (an install, a reload, a deletion) and through a whole Sync, so
	// that a Sync never lists the store before an install and reads the
	// loaded set after it (it would unload the plugin just installed).
	storeMu sync.Mutex
	mu      sync.RWMutex
	plugins map[string]*plugin
	// syncFailed remembers, by plugin, the install (its update time) that
	// did not load in Sync, so that it is not compiled again until it
	// changes.
	syncFailed map[string]time.Time
}

// New returns a Manager; Start loads the plugins.
func New(opt Options) *Manager {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	f := fetcher{client: opt.Fetch}
	return &Manager{opt: opt, fetch: f, plugins: map[string]*plugin{}, syncFailed: map[string]time.Time{},
		reg: &registry{url: opt.RegistryURL, fetch: f, now: opt.Now}}
}

// Start loads the file-based plugins of Dir and the installed ones. A
// plugin that does not load is logged and left out; Start fails only
// when the store cannot be read.
func (m *Manager) Start(ctx context.Context) error {
	if m.opt.Dir != "" {
		m.loadDir(ctx)
	}
	list, err := m.opt.Store.ListPlugins(ctx)
	if err != nil {
		return fmt.Errorf("plugins: %w", err)
	}
	for _, sp := range list {
		if !sp.Enabled {
			continue
		}
		mf, err := ParseManifest(sp.Manifest)
		if err == nil {
			err = m.load(ctx, mf, SourceURL, sp.URL, sp.SHA256, sp.WASM)
		}
		if err != nil {
			m.opt.Logger.Warn("an installed plugin did not load", "plugin", sp.ID, "err", err)
			m.event(ctx, "plugin.load_failed", eventlog.Error, "", sp.ID, map[string]any{"error": err.Error()})
		}
	}
	return nil
}

// loadDir loads every manifest in Dir.
func (m *Manager) loadDir(ctx context.Context) {
	paths, _ := filepath.Glob(filepath.Join(m.opt.Dir, "*.json"))
	nested, _ := filepath.Glob(filepath.Join(m.opt.Dir, "*", "manifest.json"))
	paths = append(paths, nested...)
	sort.Strings(paths)
	for _, p := range paths {
		if err := m.loadFile(ctx, p); err != nil {
			m.opt.Logger.Warn("a plugin file did not load", "path", p, "err", err)
			m.event(ctx, "plugin.load_failed", eventlog.Error, "", p, map[string]any{"error": err.Error()})
		}
	}
}

func (m *Manager) loadFile(ctx context.Context, path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	mf, err := ParseManifest(raw)
	if err != nil {
		return err
	}
	wasmPath := mf.WASM
	if !filepath.IsAbs(wasmPath) {
		wasmPath = filepath.Join(filepath.Dir(path), filepath.FromSlash(wasmPath))
	}
	bin, err := os.ReadFile(wasmPath)
	if err != nil {
		return err
	}
	abs, _ := filepath.Abs(path)
	return m.load(ctx, mf, SourceFile, "file://"+filepath.ToSlash(abs), "", bin)
}

// load compiles bin and makes it the loaded plugin mf.ID, closing the
// module it replaces.
func (m *Manager) load(ctx context.Context, mf Manifest, source, url, sum string, bin []byte) error {
	p := &plugin{manifest: mf, source: source, url: url, sha256: sum, loadedAt: m.opt.Now()}
	mod, err := m.opt.Runtime.Load(ctx, bin, wasm.ModuleOptions{
		Name: mf.ID, AllowedHosts: mf.AllowedHosts, HTTPClient: m.opt.Plugin, Env: env{m: m, p: p},
	})
	if err != nil {
		return err
	}
	if err := checkAuthExports(mf, mod.Exports); err != nil {
		_ = mod.Close(context.WithoutCancel(ctx))
		return err
	}
	p.module = mod
	m.mu.Lock()
	old := m.plugins[mf.ID]
	m.plugins[mf.ID] = p
	m.mu.Unlock()
	if old != nil {
		_ = old.module.Close(context.WithoutCancel(ctx))
	}
	return nil
}

// get returns the loaded plugin id.
func (m *Manager) get(id string) (*plugin, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.plugins[id]
	return p, ok
}

// Close unloads every plugin.
func (m *Manager) Close(ctx context.Context) {
	m.mu.Lock()
	ps := m.plugins
	m.plugins = map[string]*plugin{}
	m.mu.Unlock()
	for _, p := range ps {
		_ = p.module.Close(ctx)
	}
}

// EncryptionConfigured reports whether secrets can be sealed.
func (m *Manager) EncryptionConfigured() bool { return m.opt.Sealer != nil }

// Preview is what a manifest URL offers, before anything is stored.
type Preview struct {
	ID              string       `json:"id"`
	Name            string       `json:"name"`
	Version         string       `json:"version"`
	Description     string       `json:"description"`
	IconURL         string       `json:"icon_url"`
	AuthType        string       `json:"auth_type"`
	RequiredSecrets []SecretSpec `json:"required_secrets"`
	ManifestURL     string       `json:"manifest_url"`
	WASMURL         string       `json:"wasm_url"`
}

// Preview fetches and parses the manifest at url; nothing is stored.
func (m *Manager) Preview(ctx context.Context, url string) (Preview, error) {
	if url == "" {
		return Preview{}, fail.New(fail.Invalid, "url is required")
	}
	f, err := m.fetch.manifest(ctx, url)
	if err != nil {
		return Preview{}, err
	}
	mf := f.Manifest
	return Preview{ID: mf.ID, Name: mf.Name, Version: mf.Version, Description: mf.Description, IconURL: mf.IconURL,
		AuthType: mf.AuthType, RequiredSecrets: mf.RequiredSecrets, ManifestURL: f.ManifestURL, WASMURL: f.WASMURL}, nil
}

// Install fetches the manifest at url and its module (checked against
// pin, a hex SHA-256, when given), loads it and stores it, replacing an
// installed plugin of the same id. A file-based plugin of that id is not
// replaced (Conflict).
func (m *Manager) Install(ctx context.Context, actor, url, pin string) (Summary, error) {
	if url == "" {
		return Summary{}, fail.New(fail.Invalid, "url is required")
	}
	f, err := m.fetch.all(ctx, url, pin)
	if err != nil {
		return Summary{}, err
	}
	if p, ok := m.get(f.Manifest.ID); ok && p.source == SourceFile {
		return Summary{}, fail.Newf(fail.Conflict, "plugin %s is loaded from a file", f.Manifest.ID)
	}
	stored := ""
	if pin != "" {
		stored = f.SHA256
	}
	if err := m.installFetched(ctx, actor, f, stored, "plugin.installed"); err != nil {
		return Summary{}, err
	}
	return m.Summary(ctx, f.Manifest.ID)
}

// installFetched loads f and stores it with the stored pin.
func (m *Manager) installFetched(ctx context.Context, actor string, f fetched, pin, event string) error {
	m.storeMu.Lock()
	defer m.storeMu.Unlock()
	if err := m.load(ctx, f.Manifest, SourceURL, f.ManifestURL, pin, f.WASM); err != nil {
		return fail.Wrap(fail.Invalid, "the module does not load: "+err.Error(), err)
	}
	now := m.opt.Now()
	if err := m.opt.Store.PutPlugin(ctx, storage.Plugin{ID: f.Manifest.ID, URL: f.ManifestURL, SHA256: pin,
		Manifest: f.ManifestRaw, WASM: f.WASM, Enabled: true, InstalledAt: now, UpdatedAt: now}); err != nil {
		m.unload(ctx, f.Manifest.ID)
		return err
	}
	m.event(ctx, event, eventlog.Info, actor, f.Manifest.ID, map[string]any{
		"url": f.ManifestURL, "version": f.Manifest.Version, "sha256": f.SHA256})
	return nil
}

func (m *Manager) unload(ctx context.Context, id string) bool {
	m.mu.Lock()
	p, ok := m.plugins[id]
	delete(m.plugins, id)
	m.mu.Unlock()
	if ok {
		_ = p.module.Close(context.WithoutCancel(ctx))
	}
	return ok
}

// Delete unloads plugin id and forgets its install; its secrets are
// kept. NotFound when it is not loaded.
func (m *Manager) Delete(ctx context.Context, actor, id string) error {
	m.storeMu.Lock()
	defer m.storeMu.Unlock()
	p, ok := m.get(id)
	if !ok {
		return fail.Newf(fail.NotFound, "plugin %s is not loaded", id)
	}
	if p.source == SourceURL {
		if err := m.opt.Store.DeletePlugin(ctx, id); err != nil && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
	}
	m.unload(ctx, id)
	m.event(ctx, "plugin.deleted", eventlog.Info, actor, id, nil)
	return nil
}

// Reload fetches plugin id again, from newURL when given (which clears
// the stored pin) or from its URL (checked against its pin). Invalid for
// file-based plugins, NotFound when not installed.
func (m *Manager) Reload(ctx context.Context, actor, id, newURL string) (Summary, error) {
	if p, ok := m.get(id); ok && p.source == SourceFile {
		return Summary{}, fail.Newf(fail.Invalid, "plugin %s is loaded from a file and cannot be reloaded", id)
	}
	sp, err := m.opt.Store.GetPlugin(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return Summary{}, fail.Newf(fail.NotFound, "plugin %s is not installed", id)
	}
	if err != nil {
		return Summary{}, err
	}
	url, pin := sp.URL, sp.SHA256
	if newURL != "" && newURL != sp.URL {
		url, pin = newURL, ""
	}
	f, err := m.fetch.all(ctx, url, pin)
	if err != nil {
		return Summary{}, err
	}
	if f.Manifest.ID != id {
		return Summary{}, fail.Newf(fail.Invalid, "the manifest at %s is plugin %s, not %s", url, f.Manifest.ID, id)
	}
	if err := m.installFetched(ctx, actor, f, pin, "plugin.reloaded"); err != nil {
		return Summary{}, err
	}
	return m.Summary(ctx, id)
}

// Call runs the script-library function fn of plugin id with input
// (JSON) and returns its answer (JSON).
func (m *Manager) Call(ctx context.Context, id, fn string, input json.RawMessage) (json.RawMessage, error) {
	p, ok := m.get(id)
	if !ok {
		return nil, fmt.Errorf("plugin %s is not loaded", id)
	}
	return p.module.CallFunction(ctx, fn, input)
}

// event records an event-log entry about plugin subject.
func (m *Manager) event(ctx context.Context, typ, severity, actor, subject string, detail map[string]any) {
	if m.opt.Events == nil {
		return
	}
	m.opt.Events.Record(context.WithoutCancel(ctx), eventlog.Entry{Type: typ, Severity: severity, ActorDID: actor,
		Subject: subject, Detail: detail})
}

// Sync brings the loaded plugins in line with the installed ones, for
// installs, reloads and deletions made through another instance sharing
// the database: a plugin installed or changed there (another module, or
// updated since it was loaded here) is loaded, one deleted or disabled
// there is unloaded. File-based plugins are left as they are.
func (m *Manager) Sync(ctx context.Context) error {
	m.storeMu.Lock()
	defer m.storeMu.Unlock()
	list, err := m.opt.Store.ListPlugins(ctx)
	if err != nil {
		return fmt.Errorf("plugins: %w", err)
	}
	installed := map[string]bool{}
	for _, sp := range list {
		if !sp.Enabled {
			continue
		}
		installed[sp.ID] = true
		if p, ok := m.get(sp.ID); ok && (p.source == SourceFile ||
			(p.url == sp.URL && p.sha256 == sp.SHA256 && !p.loadedAt.Before(sp.UpdatedAt))) {
			continue
		}
		m.mu.RLock()
		failed, tried := m.syncFailed[sp.ID]
		m.mu.RUnlock()
		if tried && failed.Equal(sp.UpdatedAt) {
			continue // it did not load as it is; wait for a change
		}
		mf, err := ParseManifest(sp.Manifest)
		if err == nil {
			err = m.load(ctx, mf, SourceURL, sp.URL, sp.SHA256, sp.WASM)
		}
		m.mu.Lock()
		delete(m.syncFailed, sp.ID)
		if err != nil {
			m.syncFailed[sp.ID] = sp.UpdatedAt
		}
		m.mu.Unlock()
		if err != nil {
			m.opt.Logger.Warn("an installed plugin did not load", "plugin", sp.ID, "err", err)
		}
	}
	m.mu.RLock()
	var gone []string
	for id, p := range m.plugins {
		if p.source == SourceURL && !installed[id] {
			gone = append(gone, id)
		}
	}
	m.mu.RUnlock()
	for _, id := range gone {
		m.unload(ctx, id)
	}
	return nil
}
