package appview_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/metricstest"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// registryStandIn serves a plugin registry index listing one plugin, id.
func registryStandIn(t *testing.T, id string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"plugins": []map[string]any{{
			"id": id, "name": id, "latest_version": "1.0.0", "manifest_url": "https://plugins.test/" + id + "/manifest.json",
		}}})
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/index.json"
}

// settingsAdmin wraps the settings endpoints for a test.
type settingsAdmin struct {
	t     *testing.T
	admin *testenv.Admin
}

func (s settingsAdmin) put(key, value string) {
	s.t.Helper()
	if r := s.admin.Do(s.t, "PUT", "/admin/settings/"+key, map[string]any{"value": value}); r.Status != 200 {
		s.t.Fatalf("PUT %s=%q: %d %s", key, value, r.Status, r.Raw)
	}
}

func (s settingsAdmin) delete(key string) {
	s.t.Helper()
	if r := s.admin.Do(s.t, "DELETE", "/admin/settings/"+key, nil); r.Status != 204 {
		s.t.Fatalf("DELETE %s: %d %s", key, r.Status, r.Raw)
	}
}

// official lists the ids of GET /admin/plugins/official on env.
func (s settingsAdmin) official(env *testenv.Env) []string {
	s.t.Helper()
	r := env.Do(s.t, "GET", "/admin/plugins/official", nil, testenv.Bearer(s.admin.Account.ServiceAuth(s.t))...)
	var out struct {
		Plugins []struct{ ID string } `json:"plugins"`
	}
	r.JSON(s.t, &out)
	if r.Status != 200 {
		s.t.Fatalf("official plugins: %d %s", r.Status, r.Raw)
	}
	ids := []string{}
	for _, p := range out.Plugins {
		ids = append(ids, p.ID)
	}
	return ids
}

// eventually polls ok until it holds (15 s at most).
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never saw %s", what)
		}
	}
}

// TestSettingsOverrideEnvironment: a setting named after an environment
// variable overrides it through the admin API, live or at the next start,
// and deleting it brings the environment's value back; the variables that
// cannot be overridden are refused.
func TestSettingsOverrideEnvironment(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		ctx := context.Background()
		var skew atomic.Int64 // the instance's clock runs this far ahead
		now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
		registryA, registryB := registryStandIn(t, "alpha"), registryStandIn(t, "beta")
		env := testenv.New(t, open(t), appview.Config{
			Clients:               appview.ClientConfig{DefaultRateLimitCapacity: 2, DefaultRateLimitRefillRate: 0.001},
			EventLogRetentionDays: 30,
			Plugins:               appview.PluginConfig{RegistryURL: registryA},
			Ingest:                appview.IngestConfig{RelayURL: "http://127.0.0.1:1"},
			Now:                   now,
			Logger:                slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo})),
		})
		s := settingsAdmin{t, env.Bootstrap(t)}

		// Refused: a variable no setting may override, and values a
		// variable cannot take.
		for key, value := range map[string]string{
			"database_url": "sqlite://elsewhere.db", "session_secret": strings.Repeat("s", 40), "port": "4000",
			"allow_private_networks": "true", "service_auth_audiences": "*", "public_url": "https://x.example.com",
		} {
			r := s.admin.Do(t, "PUT", "/admin/settings/"+key, map[string]any{"value": value})
			if r.Status != 400 || !strings.HasPrefix(r.Error(t), key+" cannot be a setting: ") ||
				!strings.HasSuffix(r.Error(t), ". Set "+strings.ToUpper(key)+" in the environment") {
				t.Errorf("PUT %s: %d %s", key, r.Status, r.Raw)
			}
		}
		for key, value := range map[string]string{
			"default_rate_limit_capacity": "0", "default_rate_limit_refill_rate": "fast", "event_log_retention_days": "-1",
			"plugin_registry_url": "registry", "log_level": "loud", "jetstream_url": "ftp://js.example.com", "event_source": "relay",
		} {
			r := s.admin.Do(t, "PUT", "/admin/settings/"+key, map[string]any{"value": value})
			if r.Status != 400 || !strings.HasPrefix(r.Error(t), "invalid "+key+": ") {
				t.Errorf("PUT %s=%q: %d %s", key, value, r.Status, r.Raw)
			}
		}
		if r := s.admin.Do(t, "GET", "/admin/settings", nil); string(r.Raw) != "{}" {
			t.Fatalf("refused settings were stored: %s", r.Raw)
		}

		// log_level, live.
		logs := func(l slog.Level) bool { return env.App.Config().Logger.Enabled(ctx, l) }
		if logs(slog.LevelDebug) || !logs(slog.LevelInfo) {
			t.Fatal("the configured logger's level does not apply")
		}
		s.put("log_level", "debug")
		if !logs(slog.LevelDebug) {
			t.Fatal("log_level=debug: debug is not logged")
		}
		s.put("log_level", "error")
		if logs(slog.LevelWarn) || !logs(slog.LevelError) {
			t.Fatal("log_level=error: warnings are still logged")
		}
		s.delete("log_level")
		if logs(slog.LevelDebug) || !logs(slog.LevelInfo) {
			t.Fatal("after DELETE the configured level does not apply again")
		}

		// plugin_registry_url, live.
		if got := s.official(env); !slices.Equal(got, []string{"alpha"}) {
			t.Fatalf("official plugins from PLUGIN_REGISTRY_URL: %v", got)
		}
		s.put("plugin_registry_url", registryB)
		if got := s.official(env); !slices.Equal(got, []string{"beta"}) {
			t.Fatalf("official plugins from the setting: %v", got)
		}
		s.put("plugin_registry_url", "")
		if got := s.official(env); len(got) != 0 {
			t.Fatalf("official plugins with the registry set to none: %v", got)
		}
		s.delete("plugin_registry_url")
		if got := s.official(env); !slices.Equal(got, []string{"alpha"}) {
			t.Fatalf("official plugins after DELETE: %v", got)
		}

		// event_log_retention_days, live: a change purges at once.
		seed := func(types ...string) {
			t.Helper()
			var evs []storage.Event
			for _, typ := range types {
				age, _ := time.ParseDuration(strings.TrimPrefix(typ, "test.") + "h")
				evs = append(evs, storage.Event{Type: typ, Severity: "info", CreatedAt: now().Add(-age)})
			}
			if err := env.Store.AppendEvents(ctx, evs); err != nil {
				t.Fatal(err)
			}
		}
		kept := func() []string {
			t.Helper()
			evs, _, err := env.Store.ListEvents(ctx, storage.EventFilter{Category: "test", Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, e := range evs {
				out = append(out, e.Type)
			}
			slices.Sort(out)
			return out
		}
		seed("test.240") // 10 days old
		s.put("event_log_retention_days", "5")
		eventually(t, "the purge of entries older than 5 days", func() bool { return len(kept()) == 0 })
		seed("test.480", "test.960") // 20 and 40 days old
		s.delete("event_log_retention_days")
		// One purge removes both or neither: EVENT_LOG_RETENTION_DAYS (30)
		// applies again.
		eventually(t, "the purge of entries older than 30 days", func() bool { return !slices.Contains(kept(), "test.960") })
		if got := kept(); !slices.Equal(got, []string{"test.480"}) {
			t.Fatalf("after DELETE the purge kept %v, want the 20-day-old entry", got)
		}

		// Settings that apply at start: the running instance keeps its
		// configuration, the next one starts with them.
		restart := func() appview.Config {
			t.Helper()
			app, err := appview.New(appview.Config{
				Store:    env.Store,
				Logger:   quiet,
				Security: appview.SecurityConfig{TokenEncryptionKey: testenv.TokenKey},
				Ingest:   appview.IngestConfig{JetstreamURL: "off", RelayURL: "http://127.0.0.1:1"},
				Network:  appview.NetworkConfig{PLCURL: env.PLC.URL},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer app.Shutdown(ctx)
			return app.Config()
		}
		otherPLC := httptest.NewServer(http.NotFoundHandler())
		defer otherPLC.Close()
		s.put("relay_url", "https://relay.example.com")
		s.put("jetstream_url", "wss://jetstream.example.com/subscribe")
		s.put("event_source", "firehose")
		s.put("plc_url", otherPLC.URL)
		if c := env.App.Config(); c.Ingest.RelayURL != "http://127.0.0.1:1" || c.Ingest.JetstreamURL != "off" {
			t.Fatalf("the running instance changed: %q %q", c.Ingest.RelayURL, c.Ingest.JetstreamURL)
		}
		// Written by hand: a refused variable and a value that cannot
		// apply are ignored.
		for k, v := range map[string]string{"database_url": "sqlite://elsewhere.db", "lexicon_dns_server": "no port"} {
			if err := env.Store.PutSetting(ctx, k, v); err != nil {
				t.Fatal(err)
			}
		}
		c := restart()
		if c.Ingest.RelayURL != "https://relay.example.com" || c.Ingest.JetstreamURL != "wss://jetstream.example.com/subscribe" ||
			c.Ingest.EventStream != appview.EventStreamFirehose || c.Network.PLCURL != otherPLC.URL || c.Network.LexiconDNSServer != "" {
			t.Fatalf("started with %q %q %q %q %q", c.Ingest.RelayURL, c.Ingest.JetstreamURL, c.Ingest.EventStream, c.Network.PLCURL, c.Network.LexiconDNSServer)
		}
		// The private-network guard exempts the environment's PLC
		// directory for the PLC lookups only, never the one a setting
		// names: resolving through the setting's PLC on loopback is
		// refused, and the shared client reaches neither.
		if _, err := c.Network.Directory.LookupDID(ctx, syntax.DID("did:plc:nobody")); err == nil || !strings.Contains(err.Error(), "not public") {
			t.Fatalf("a setting's PLC directory on loopback: %v", err)
		}
		for _, u := range []string{env.PLC.URL + "/did:plc:nobody", otherPLC.URL} {
			if resp, err := c.Network.HTTPClient.Get(u); err == nil {
				resp.Body.Close()
				t.Fatalf("the shared client reached %s on loopback", u)
			}
		}
		for _, k := range []string{"relay_url", "jetstream_url", "event_source", "plc_url", "database_url", "lexicon_dns_server"} {
			s.delete(k)
		}
		if c := restart(); c.Ingest.RelayURL != "http://127.0.0.1:1" || c.Ingest.JetstreamURL != "off" ||
			c.Ingest.EventStream != appview.EventStreamJetstream || c.Network.PLCURL != env.PLC.URL {
			t.Fatalf("after DELETE started with %q %q %q %q", c.Ingest.RelayURL, c.Ingest.JetstreamURL, c.Ingest.EventStream, c.Network.PLCURL)
		}

		// The rate-limit defaults, live, last: the clock moves.
		if _, err := env.App.Lexicons().Put(ctx, lexicon.Upload{Document: json.RawMessage(
			`{"lexicon":1,"id":"app.test.ping","defs":{"main":{"type":"query"}}}`)}); err != nil {
			t.Fatal(err)
		}
		client, _ := env.NewClient(t, apiclients.NewClient{})
		ping := func(want int) {
			t.Helper()
			if r := env.Do(t, "GET", "/xrpc/app.test.ping", nil, "X-Client-Key", client.Key); r.Status != want {
				t.Fatalf("ping: %d %s, want %d", r.Status, r.Raw, want)
			}
		}
		s.put("default_rate_limit_capacity", "1")
		ping(200)
		ping(429)
		// One token takes 1000 s at DEFAULT_RATE_LIMIT_REFILL_RATE, 1 ms
		// at the setting's.
		s.put("default_rate_limit_refill_rate", "1000")
		skew.Add(int64(time.Second))
		ping(200)
		s.delete("default_rate_limit_refill_rate")
		s.delete("default_rate_limit_capacity")
		skew.Add(int64(3000 * time.Second)) // 3 tokens at 0.001/s, capped at 2
		ping(200)
		ping(200)
		ping(429)
		skew.Add(int64(time.Second))
		ping(429)
	})
}

// TestSettingsReachOtherInstances: a live setting changed through one
// instance applies on another sharing the database, and its deletion too:
// through LISTEN/NOTIFY on PostgreSQL, the reconciliation on SQLite.
func TestSettingsReachOtherInstances(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		ctx := context.Background()
		store := open(t)
		registryA, registryB := registryStandIn(t, "alpha"), registryStandIn(t, "beta")
		cfg := appview.Config{
			Plugins: appview.PluginConfig{RegistryURL: registryA},
			Cluster: appview.ClusterConfig{ChangeReconcile: 200 * time.Millisecond},
			Logger:  slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo})),
		}
		a := testenv.New(t, store, cfg)
		cfg.Network.PLCURL = a.PLC.URL // where the admin's DID document is
		b := testenv.New(t, store, cfg)
		s := settingsAdmin{t, a.Bootstrap(t)}
		debug := func() bool { return b.App.Config().Logger.Enabled(ctx, slog.LevelDebug) }
		if debug() || !slices.Equal(s.official(b), []string{"alpha"}) {
			t.Fatal("the other instance does not start from its configuration")
		}

		s.put("log_level", "debug")
		s.put("plugin_registry_url", registryB)
		eventually(t, "log_level on the other instance", debug)
		eventually(t, "plugin_registry_url on the other instance", func() bool { return slices.Equal(s.official(b), []string{"beta"}) })

		s.delete("log_level")
		s.delete("plugin_registry_url")
		eventually(t, "the deleted log_level on the other instance", func() bool { return !debug() })
		eventually(t, "the deleted plugin_registry_url on the other instance", func() bool { return slices.Equal(s.official(b), []string{"alpha"}) })
	})
}

// TestLabelerMaxFrameSetting: labeler.max_frame_bytes takes a number of
// bytes within its bounds, and nothing else.
func TestLabelerMaxFrameSetting(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, storagetest.SQLite(t), appview.Config{})
	adm := env.Bootstrap(t)
	for value, want := range map[string]int{
		"abc": 400, "-1": 400, "65535": 400, "67108865": 400,
		"65536": 200, "4194304": 200, "67108864": 200,
	} {
		if r := adm.Do(t, "PUT", "/admin/settings/labeler.max_frame_bytes", map[string]any{"value": value}); r.Status != want {
			t.Errorf("%q: %d %s, want %d", value, r.Status, r.Raw, want)
		}
	}
}

// TestPluginMaxMemorySetting: plugins.max_memory_bytes takes a number of
// bytes within its bounds, and nothing else, and sets the plugins'
// memory ceiling at once; deleting it restores the configured one.
func TestPluginMaxMemorySetting(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	env := testenv.New(t, storagetest.SQLite(t), appview.Config{Metrics: appview.MetricsConfig{Registerer: reg},
		Plugins: appview.PluginConfig{MaxMemory: 256 << 20}})
	adm := env.Bootstrap(t)
	limit := func() float64 {
		v, _ := metricstest.Value(t, reg, "lexview_plugin_memory_limit_bytes", nil)
		return v
	}
	if got := limit(); got != 256<<20 {
		t.Fatalf("configured ceiling %v", got)
	}
	for _, c := range []struct {
		value string
		want  int
	}{
		{"abc", 400}, {"-1", 400}, {"67108863", 400}, {"68719476737", 400}, {"1e9", 400},
		{"67108864", 200}, {"68719476736", 200}, {"1073741824", 200},
	} {
		if r := adm.Do(t, "PUT", "/admin/settings/plugins.max_memory_bytes", map[string]any{"value": c.value}); r.Status != c.want {
			t.Errorf("%q: %d %s, want %d", c.value, r.Status, r.Raw, c.want)
		}
	}
	if got := limit(); got != 1<<30 {
		t.Fatalf("ceiling after the last valid value: %v", got)
	}
	if r := adm.Do(t, "DELETE", "/admin/settings/plugins.max_memory_bytes", nil); r.Status != 204 && r.Status != 200 {
		t.Fatalf("delete: %d %s", r.Status, r.Raw)
	}
	if got := limit(); got != 256<<20 {
		t.Fatalf("ceiling after the setting was deleted: %v", got)
	}
}
