package plugins

import (
	"context"
	"strings"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/plugins/wasm"
	"github.com/lexview/lexview/storage"
)

// maskPrefix marks a value the admin API showed masked: sent back, it
// keeps the stored value.
const maskPrefix = "********"

// maxSecretSize bounds one secret value.
const maxSecretSize = 64 << 10

// secretPurpose binds a sealed secret to its plugin and key.
func secretPurpose(id, key string) string { return "plugin-secret:" + id + ":" + key }

// Mask shows a secret the way the admin API does: the last 4 characters
// of a value longer than 8, behind the mask; a shorter value fully
// masked.
func Mask(v string) string {
	r := []rune(v)
	if len(r) > 8 {
		return maskPrefix + string(r[len(r)-4:])
	}
	return maskPrefix
}

// openSecrets decrypts plugin id's secrets. Values that do not open
// (sealed under another key) are left out.
func (m *Manager) openSecrets(ctx context.Context, id string) (map[string]string, error) {
	list, err := m.opt.Store.ListPluginSecrets(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(list))
	for _, s := range list {
		if m.opt.Sealer == nil {
			break
		}
		v, err := m.opt.Sealer.OpenString(secretPurpose(id, s.Key), s.Sealed)
		if err != nil {
			m.opt.Logger.Warn("a plugin secret could not be decrypted", "plugin", id, "key", s.Key)
			continue
		}
		out[s.Key] = v
	}
	return out, nil
}

// secretsConfigured reports whether every required secret is stored.
func (m *Manager) secretsConfigured(ctx context.Context, id string, required []SecretSpec) (bool, error) {
	if len(required) == 0 {
		return true, nil
	}
	list, err := m.opt.Store.ListPluginSecrets(ctx, id)
	if err != nil {
		return false, err
	}
	have := map[string]bool{}
	for _, s := range list {
		have[s.Key] = true
	}
	for _, r := range required {
		if !have[r.Key] {
			return false, nil
		}
	}
	return true, nil
}

// Secrets returns plugin id's stored secrets, masked. Unavailable without
// token encryption; NotFound when the plugin is neither loaded nor
// installed.
func (m *Manager) Secrets(ctx context.Context, id string) (map[string]string, error) {
	if m.opt.Sealer == nil {
		return nil, fail.New(fail.Unavailable, "token encryption is not configured")
	}
	if _, err := m.Summary(ctx, id); err != nil {
		return nil, err
	}
	vals, err := m.openSecrets(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(vals))
	for k, v := range vals {
		out[k] = Mask(v)
	}
	return out, nil
}

// PutSecrets updates plugin id's secrets: a value starting with the mask
// keeps the stored one, an empty value clears it, any other value
// replaces it (sealed).
func (m *Manager) PutSecrets(ctx context.Context, actor, id string, values map[string]string) error {
	if m.opt.Sealer == nil {
		return fail.New(fail.Unavailable, "token encryption is not configured")
	}
	if values == nil {
		return fail.New(fail.Invalid, "secrets is required")
	}
	if _, err := m.Summary(ctx, id); err != nil {
		return err
	}
	var (
		set           []storage.PluginSecret
		clear, change []string
	)
	for k, v := range values {
		switch {
		case !secretKeyPattern.MatchString(k):
			return fail.Invalidf("secret key %q must be 1 to 128 characters of letters, digits, _, . and -, starting with a letter or _", k)
		case strings.HasPrefix(v, maskPrefix):
			continue
		case v == "":
			clear = append(clear, k)
		case len(v) > maxSecretSize:
			return fail.Invalidf("secret %s must be at most %d bytes", k, maxSecretSize)
		default:
			sealed, err := m.opt.Sealer.SealString(secretPurpose(id, k), v)
			if err != nil {
				return err
			}
			set = append(set, storage.PluginSecret{PluginID: id, Key: k, Sealed: sealed, UpdatedAt: m.opt.Now()})
		}
		change = append(change, k)
	}
	if err := m.opt.Store.UpdatePluginSecrets(ctx, id, set, clear); err != nil {
		return err
	}
	if p, ok := m.get(id); ok {
		p.secretsMu.Lock()
		p.secrets = nil
		p.secretsMu.Unlock()
	}
	m.event(ctx, "plugin.secrets_updated", eventlog.Info, actor, id, map[string]any{"keys": change})
	return nil
}

// env is a loaded plugin's view of the host (wasm.Env).
type env struct {
	m *Manager
	p *plugin
}

// Secret implements wasm.Env: the decrypted secret, cached until the
// next PutSecrets.
func (e env) Secret(ctx context.Context, key string) (string, bool) {
	e.p.secretsMu.Lock()
	defer e.p.secretsMu.Unlock()
	if e.p.secrets == nil {
		vals, err := e.m.openSecrets(ctx, e.p.manifest.ID)
		if err != nil {
			e.m.opt.Logger.Warn("plugin secrets cannot be read", "plugin", e.p.manifest.ID, "err", err)
			return "", false
		}
		e.p.secrets = vals
	}
	v, ok := e.p.secrets[key]
	return v, ok
}

// Config implements wasm.Env: the manifest's config object.
func (e env) Config(context.Context) []byte {
	if len(e.p.manifest.Config) == 0 {
		return []byte("{}")
	}
	return e.p.manifest.Config
}

// Log implements wasm.Env: a plugin.log event-log entry.
func (e env) Log(ctx context.Context, level wasm.Level, message string) {
	sev := eventlog.Info
	switch level {
	case wasm.LevelWarn:
		sev = eventlog.Warn
	case wasm.LevelError:
		sev = eventlog.Error
	}
	e.m.event(ctx, "plugin.log", sev, "", e.p.manifest.ID, map[string]any{"level": level.String(), "message": message})
}

var _ wasm.Env = env{}
