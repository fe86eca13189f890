package appview

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/core/labelsub"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/service/plugins/wasm"
)

// Setting resolves an instance setting: the value stored through the admin
// API (PUT /admin/settings/{key}) overrides envDefault, the value the
// environment variable or Config supplies. A read failure is logged and
// falls back to envDefault.
//
// The settings the instance reads itself are listed in docs/admin-api.md
// (section Settings): the branding (app_name, terms_of_service_url,
// privacy_policy_url), validation.<collection>, the backfill's
// backfill.* and the settings named after the environment variables they
// override (default_rate_limit_capacity for DEFAULT_RATE_LIMIT_CAPACITY
// and so on), which the App applies itself, live or at start.
//
// The logo is a blob, not a setting (SettingsStore.GetBlob("logo")).
func (a *App) Setting(ctx context.Context, key, envDefault string) string {
	return a.svc.Instance.Setting(ctx, key, envDefault)
}

// envSetting is an environment variable (a Config field) that the
// instance setting of the same name in lower case overrides, or that no
// setting may override. Exactly one of atStart, live and refused is set.
type envSetting struct {
	env string
	// atStart checks a stored value and lays it over the configuration
	// New starts with: such a setting applies when an instance starts.
	atStart func(c *Config, v string) error
	// live checks a stored value and lays it over the values read at use
	// time: such a setting applies at once (on this instance when it is
	// stored, on the others through the change feed).
	live func(l *liveSettings, v string) error
	// refused says why the variable cannot be overridden by a setting.
	refused string
}

// key is the setting's key: the variable's name in lower case.
func (s envSetting) key() string { return strings.ToLower(s.env) }

// Why some variables cannot be settings.
const (
	refusedListener = "where this process listens is the process's own: a stored value would apply to every instance sharing the database, and a wrong one could lock the admin API out"
	refusedSecret   = "secrets are never stored in plaintext, and this one is needed before the settings can be read"
	refusedBoundary = "it widens a security boundary, which stays with whoever runs the process: an admin API credential cannot change it"
)

// envSettings lists every environment variable of the command
// (cmd/appview) and what a setting of its name does. A test checks it
// against docs/configuration.md and docs/admin-api.md.
var envSettings = []envSetting{
	{env: "DATABASE_URL", refused: "the settings are stored in the database it names"},
	{env: "HOST", refused: refusedListener},
	{env: "PORT", refused: refusedListener},
	{env: "METRICS_ADDR", refused: refusedListener},
	{env: "PUBLIC_URL", refused: "it is how this process is reached, and seeds the primary domain on the first start; the domains the instance serves are changed through /admin/domains"},
	{env: "INSTANCE_ID", refused: "it names one process among those sharing the database"},
	{env: "SESSION_SECRET", refused: refusedSecret},
	{env: "TOKEN_ENCRYPTION_KEY", refused: refusedSecret},
	{env: "ADMIN_CLAIM", refused: "it only matters before the first admin exists, when nobody can change settings"},
	{env: "SERVICE_AUTH_AUDIENCES", refused: refusedBoundary},
	{env: "ALLOW_PRIVATE_NETWORKS", refused: refusedBoundary},
	{env: "PLUGIN_DIR", refused: "it is a directory of this machine: an admin API credential cannot make the process load code from its file system"},
	{env: "LOG_FORMAT", refused: "the command makes its log handler before the database is opened"},

	{env: "EVENT_SOURCE", atStart: func(c *Config, v string) error {
		if v != EventStreamJetstream && v != EventStreamFirehose {
			return fmt.Errorf("use %s or %s", EventStreamJetstream, EventStreamFirehose)
		}
		c.Ingest.EventStream = v
		return nil
	}},
	{env: "JETSTREAM_URL", atStart: func(c *Config, v string) error {
		if v != "off" {
			if err := checkURL(v, "wss", "ws", "https", "http"); err != nil {
				return fmt.Errorf("%w, or off", err)
			}
		}
		c.Ingest.JetstreamURL = v
		return nil
	}},
	{env: "RELAY_URL", atStart: func(c *Config, v string) error {
		c.Ingest.RelayURL = v
		return checkURL(v, "https", "http", "wss", "ws")
	}},
	{env: "PLC_URL", atStart: func(c *Config, v string) error {
		c.Network.PLCURL = v
		return checkURL(v, "https", "http")
	}},
	{env: "LEXICON_DNS_SERVER", atStart: func(c *Config, v string) error {
		c.Network.LexiconDNSServer = v
		if v == "" {
			return nil // the system resolver
		}
		host, port, err := net.SplitHostPort(v)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || host == "" || n < 1 || n > 65535 {
			return errors.New("use host:port, or an empty value for the system resolver")
		}
		return nil
	}},

	{env: "DEFAULT_RATE_LIMIT_CAPACITY", live: func(l *liveSettings, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > math.MaxInt32 {
			return fmt.Errorf("use an integer from 1 to %d", math.MaxInt32)
		}
		l.limits.Capacity = n
		return nil
	}},
	{env: "DEFAULT_RATE_LIMIT_REFILL_RATE", live: func(l *liveSettings, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0) || math.IsInf(f, 0) {
			return errors.New("use a positive number of tokens per second")
		}
		l.limits.RefillRate = f
		return nil
	}},
	{env: "EVENT_LOG_RETENTION_DAYS", live: func(l *liveSettings, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxRetentionDays {
			return fmt.Errorf("use a number of days from 0 (keep everything) to %d", maxRetentionDays)
		}
		l.retentionDays = n
		return nil
	}},
	{env: "PLUGIN_REGISTRY_URL", live: func(l *liveSettings, v string) error {
		l.registryURL = v
		if v == "" {
			return nil // no registry
		}
		return checkURL(v, "https", "http")
	}},
	{env: "LOG_LEVEL", live: func(l *liveSettings, v string) error {
		var level slog.Level
		switch strings.ToLower(v) {
		case "debug":
			level = slog.LevelDebug
		case "info":
			level = slog.LevelInfo
		case "warn":
			level = slog.LevelWarn
		case "error":
			level = slog.LevelError
		default:
			return errors.New("use debug, info, warn or error")
		}
		l.logLevel = &level
		return nil
	}},
}

// maxRetentionDays bounds event_log_retention_days (a century).
const maxRetentionDays = 36500

// lookupEnvSetting returns the variable a setting key names.
func lookupEnvSetting(key string) (envSetting, bool) {
	for _, s := range envSettings {
		if s.key() == key {
			return s, true
		}
	}
	return envSetting{}, false
}

// checkURL refuses what is not an absolute URL of one of schemes.
func checkURL(v string, schemes ...string) error {
	u, err := url.Parse(v)
	if err == nil && u.Host != "" {
		for _, s := range schemes {
			if u.Scheme == s {
				return nil
			}
		}
	}
	return fmt.Errorf("use an absolute URL (%s)", strings.Join(schemes, ", "))
}

// checkSetting refuses (Invalid) a setting that overrides an environment
// variable with a value the instance cannot use, and one named after a
// variable that cannot be overridden. Other keys are not checked here.
func checkSetting(key, value string) error {
	s, ok := lookupEnvSetting(key)
	if !ok {
		return nil
	}
	var err error
	switch {
	case s.refused != "":
		return fail.Invalidf("%s cannot be a setting: %s. Set %s in the environment", key, s.refused, s.env)
	case s.atStart != nil:
		var c Config
		err = s.atStart(&c, value)
	default:
		var l liveSettings
		err = s.live(&l, value)
	}
	if err != nil {
		return fail.Invalidf("invalid %s: %v", key, err)
	}
	return nil
}

// withStartSettings returns cfg with the stored settings that apply at
// start laid over it (New calls it once the database is open, before the
// defaults are filled in). A stored value that cannot apply, or a setting
// of a variable that cannot be overridden, is logged and ignored. The
// default HTTP client is made first, from cfg as the environment gave it:
// the sources' own clients may reach the origins of the environment's
// PLC, relay and Jetstream URLs on a private network, never those of a
// setting.
func withStartSettings(ctx context.Context, stored map[string]string, cfg Config) Config {
	if cfg.Network.HTTPClient == nil {
		cfg = cfg.withGuardedHTTPClient()
	}
	for _, s := range envSettings {
		v, ok := stored[s.key()]
		if !ok {
			continue
		}
		switch {
		case s.refused != "":
			cfg.Logger.WarnContext(ctx, "a stored setting is ignored: it cannot override its environment variable",
				"key", s.key(), "why", s.refused)
		case s.atStart != nil:
			next := cfg
			if err := s.atStart(&next, v); err != nil {
				cfg.Logger.WarnContext(ctx, "a stored setting is ignored: its value cannot apply", "key", s.key(), "value", v, "err", err)
				continue
			}
			cfg = next
			cfg.Logger.InfoContext(ctx, "a stored setting overrides the environment", "key", s.key(), "value", v)
		default:
			var l liveSettings
			if err := s.live(&l, v); err != nil {
				cfg.Logger.WarnContext(ctx, "a stored setting is ignored: its value cannot apply", "key", s.key(), "value", v, "err", err)
			}
		}
	}
	return cfg
}

// liveSettings are the values the App reads at use time: the
// configuration's, with the stored settings that apply live laid over
// them.
type liveSettings struct {
	limits        apiclients.Limits // an API client's rate limits when it sets none
	retentionDays int               // event-log retention; 0 or less keeps everything
	registryURL   string            // the plugin registry index; "" for none
	logLevel      *slog.Level       // the least level logged; nil: the Logger's own
}

// configuredLive is liveSettings as the configuration gives them.
func (c Config) configuredLive() liveSettings {
	return liveSettings{
		limits:        apiclients.Limits{Capacity: c.Clients.DefaultRateLimitCapacity, RefillRate: c.Clients.DefaultRateLimitRefillRate},
		retentionDays: c.EventLogRetentionDays,
		registryURL:   c.Plugins.RegistryURL,
	}
}

// liveState holds the live settings and what follows them.
type liveState struct {
	// applying serialises applySettings, so that the last settings read
	// are the ones applied.
	applying sync.Mutex
	current  atomic.Pointer[liveSettings]
	level    levelFilter
	// purge wakes the event-log purge when the retention changed.
	purge chan struct{}
}

// applySettings reads the stored settings and applies those read at use
// time: the live settings overriding environment variables and the
// per-collection validation switches. It runs when the App is built and
// starts, after every change through this instance, and on every change
// through another instance (the change feed).
func (a *App) applySettings(ctx context.Context) error {
	a.live.applying.Lock()
	defer a.live.applying.Unlock()
	stored, err := a.store.ListSettings(ctx)
	if err != nil {
		return fmt.Errorf("read settings: %w", err)
	}
	a.validation.set(stored)
	a.applyOnDemand(stored)
	next := a.cfg.configuredLive()
	for _, s := range envSettings {
		if v, ok := stored[s.key()]; ok && s.live != nil {
			probe := next
			if s.live(&probe, v) == nil { // an invalid value was logged at start
				next = probe
			}
		}
	}
	prev := a.live.current.Swap(&next)
	a.clients.SetDefaults(next.limits)
	a.plugins.SetRegistryURL(next.registryURL)
	a.labelSubs.SetMaxFrame(labelerMaxFrame(stored[labelsub.MaxFrameSetting]))
	a.pluginRuntime.SetMaxMemory(pluginMaxMemory(stored[wasm.MaxMemorySetting]))
	a.live.level.set(next.logLevel)
	if prev != nil && prev.retentionDays != next.retentionDays {
		select {
		case a.live.purge <- struct{}{}:
		default: // a purge is already due
		}
	}
	return nil
}

// settingsChanged follows a setting changed through this instance.
func (a *App) settingsChanged(ctx context.Context) {
	if err := a.applySettings(ctx); err != nil {
		a.log.WarnContext(ctx, "applying the changed settings failed; they apply at the next reconciliation", "err", err)
	}
}

// eventLogRetention is how long event-log entries are kept now; 0 keeps
// everything.
func (a *App) eventLogRetention() time.Duration {
	l := a.live.current.Load()
	if l == nil || l.retentionDays <= 0 {
		return 0
	}
	return time.Duration(min(l.retentionDays, maxRetentionDays)) * 24 * time.Hour
}

// levelFilter is a slog.Handler in front of the App's logger that drops
// the records below the level log_level sets; without one, the logger's
// own handler decides.
type levelFilter struct {
	min atomic.Pointer[slog.Level]
}

func (f *levelFilter) set(l *slog.Level) { f.min.Store(l) }

// wrap returns h behind the filter.
func (f *levelFilter) wrap(h slog.Handler) slog.Handler { return &filteredHandler{f: f, next: h} }

type filteredHandler struct {
	f    *levelFilter
	next slog.Handler
}

func (h *filteredHandler) Enabled(ctx context.Context, l slog.Level) bool {
	if min := h.f.min.Load(); min != nil {
		return l >= *min
	}
	return h.next.Enabled(ctx, l)
}

func (h *filteredHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.next.Handle(ctx, r)
}

func (h *filteredHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &filteredHandler{f: h.f, next: h.next.WithAttrs(attrs)}
}

func (h *filteredHandler) WithGroup(name string) slog.Handler {
	return &filteredHandler{f: h.f, next: h.next.WithGroup(name)}
}

// labelerMaxFrame is the labeler frame limit the setting
// labelsub.MaxFrameSetting holds, or 0 (the default) when it is absent or
// invalid (a value the settings API refuses cannot be stored through it).
func labelerMaxFrame(v string) int64 {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < labelsub.MinMaxFrame || n > labelsub.MaxMaxFrame {
		return 0
	}
	return n
}

// pluginMaxMemory is the plugins' memory ceiling the setting
// wasm.MaxMemorySetting holds, or 0 (the configured ceiling) when it is
// absent or invalid.
func pluginMaxMemory(v string) int64 {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < wasm.MinMaxMemory || n > wasm.MaxMaxMemory {
		return 0
	}
	return n
}
