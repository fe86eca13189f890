package plugins

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/storage"
)

// Summary is the admin API's plugin summary.
type Summary struct {
	ID                string       `json:"id"`
	Name              string       `json:"name"`
	Version           string       `json:"version"`
	Source            string       `json:"source"`
	URL               string       `json:"url"`
	SHA256            *string      `json:"sha256"`
	Enabled           bool         `json:"enabled"`
	AuthType          string       `json:"auth_type"`
	RequiredSecrets   []SecretSpec `json:"required_secrets"`
	SecretsConfigured bool         `json:"secrets_configured"`
	LoadedAt          *string      `json:"loaded_at"`
	UpdateAvailable   bool         `json:"update_available"`
	LatestVersion     string       `json:"latest_version"`
	PendingReleases   []string     `json:"pending_releases"`
}

// List returns the summaries of the loaded plugins and of the installed
// ones that are not loaded (loaded_at null), ordered by id.
func (m *Manager) List(ctx context.Context) ([]Summary, error) {
	stored, err := m.opt.Store.ListPlugins(ctx)
	if err != nil {
		return nil, err
	}
	m.mu.RLock()
	loaded := make(map[string]*plugin, len(m.plugins))
	for id, p := range m.plugins {
		loaded[id] = p
	}
	m.mu.RUnlock()
	out := []Summary{}
	for id, p := range loaded {
		s, err := m.summarize(ctx, id, p, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	for i := range stored {
		if _, ok := loaded[stored[i].ID]; ok {
			continue
		}
		s, err := m.summarize(ctx, stored[i].ID, nil, &stored[i])
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Summary returns the summary of plugin id: loaded, or installed and not
// loaded; NotFound otherwise.
func (m *Manager) Summary(ctx context.Context, id string) (Summary, error) {
	if p, ok := m.get(id); ok {
		return m.summarize(ctx, id, p, nil)
	}
	sp, err := m.opt.Store.GetPlugin(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return Summary{}, fail.Newf(fail.NotFound, "plugin %s is not installed", id)
	}
	if err != nil {
		return Summary{}, err
	}
	return m.summarize(ctx, id, nil, &sp)
}

// CheckUpdate refreshes the registry index and returns plugin id's
// summary against it.
func (m *Manager) CheckUpdate(ctx context.Context, id string) (Summary, error) {
	if _, err := m.Summary(ctx, id); err != nil {
		return Summary{}, err
	}
	if err := m.reg.refresh(ctx); err != nil {
		return Summary{}, fail.Wrap(fail.Upstream, "the plugin registry cannot be read: "+err.Error(), err)
	}
	return m.Summary(ctx, id)
}

// summarize builds the summary of a loaded plugin p or, when p is nil, of
// the stored install sp.
func (m *Manager) summarize(ctx context.Context, id string, p *plugin, sp *storage.Plugin) (Summary, error) {
	var (
		mf       Manifest
		s        Summary
		loadedAt *string
	)
	if p != nil {
		mf = p.manifest
		s.Source, s.URL, s.Enabled = p.source, p.url, true
		if p.sha256 != "" {
			s.SHA256 = &p.sha256
		}
		t := timestamp(p.loadedAt)
		loadedAt = &t
	} else {
		parsed, err := ParseManifest(sp.Manifest)
		if err != nil {
			parsed = Manifest{ID: id, Name: id, RequiredSecrets: []SecretSpec{}, AuthType: AuthNone}
		}
		mf = parsed
		s.Source, s.URL, s.Enabled = SourceURL, sp.URL, sp.Enabled
		if sp.SHA256 != "" {
			sum := sp.SHA256
			s.SHA256 = &sum
		}
	}
	configured, err := m.secretsConfigured(ctx, id, mf.RequiredSecrets)
	if err != nil {
		return Summary{}, err
	}
	l, found := m.reg.listing(id)
	s.UpdateAvailable, s.LatestVersion, s.PendingReleases = updateInfo(mf.Version, l, found)
	s.ID, s.Name, s.Version, s.AuthType, s.RequiredSecrets = id, mf.Name, mf.Version, mf.AuthType, mf.RequiredSecrets
	s.SecretsConfigured, s.LoadedAt = configured, loadedAt
	return s, nil
}

// OfficialPlugin is one entry of GET /admin/plugins/official.
type OfficialPlugin struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	Description   string `json:"description"`
	IconURL       string `json:"icon_url"`
	LatestVersion string `json:"latest_version"`
	ManifestURL   string `json:"manifest_url"`
}

// Official returns the cached registry index and when it was fetched
// (nil: never). An index never fetched is fetched now; with no registry
// configured the list is empty.
func (m *Manager) Official(ctx context.Context) ([]OfficialPlugin, *string, error) {
	if _, at := m.reg.snapshot(); at.IsZero() && m.reg.current() != "" {
		if err := m.reg.refresh(ctx); err != nil {
			m.opt.Logger.Warn("the plugin registry cannot be read", "err", err)
		}
	}
	idx, at := m.reg.snapshot()
	out := make([]OfficialPlugin, 0, len(idx.Plugins))
	for _, l := range idx.Plugins {
		out = append(out, OfficialPlugin{ID: l.ID, Name: l.Name, Description: l.Description, IconURL: l.IconURL,
			LatestVersion: l.LatestVersion, ManifestURL: l.ManifestURL})
	}
	if at.IsZero() {
		return out, nil, nil
	}
	ts := timestamp(at)
	return out, &ts, nil
}

// RunRegistry refreshes the registry index at once and then every
// interval until ctx ends (no fetch while no registry is configured).
func (m *Manager) RunRegistry(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := m.reg.refresh(ctx); err != nil && ctx.Err() == nil {
			m.opt.Logger.Warn("the plugin registry cannot be read", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// SetRegistryURL changes the registry index's URL ("" for none), as the
// setting plugin_registry_url overriding PLUGIN_REGISTRY_URL does. A new
// URL's index is fetched at the next GET /admin/plugins/official (or
// check-update, or the periodic refresh); until then the list is empty.
func (m *Manager) SetRegistryURL(url string) { m.reg.setURL(url) }

// timestamp formats t like every admin response: ISO 8601 UTC with
// milliseconds.
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
