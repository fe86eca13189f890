package appview

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEnvSettingsDocumented: every environment variable of
// docs/configuration.md's table has an entry in envSettings (and no
// other), and docs/admin-api.md's settings table lists each entry's key
// with the variable it overrides and when it applies.
func TestEnvSettingsDocumented(t *testing.T) {
	t.Parallel()
	read := func(name string) string {
		raw, err := os.ReadFile(filepath.Join("..", "docs", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(raw)
	}
	variables := map[string]bool{}
	for line := range strings.Lines(read("configuration.md")) {
		if m := regexp.MustCompile("^\\| `([A-Z_]+)` \\|").FindStringSubmatch(line); m != nil {
			variables[m[1]] = true
		}
	}
	if len(variables) < 20 {
		t.Fatalf("docs/configuration.md lists %d variables: the table was not found", len(variables))
	}
	documented := map[string][2]string{} // key -> variable, applies
	for line := range strings.Lines(read("admin-api.md")) {
		if m := regexp.MustCompile("^\\| `([a-z_]+)` \\| `([A-Z_]+)` \\| (live|at start|refused) \\|").FindStringSubmatch(line); m != nil {
			documented[m[1]] = [2]string{m[2], m[3]}
		}
	}
	for _, s := range envSettings {
		applies := "refused"
		switch {
		case s.atStart != nil:
			applies = "at start"
		case s.live != nil:
			applies = "live"
		}
		if n := btoi(s.atStart != nil) + btoi(s.live != nil) + btoi(s.refused != ""); n != 1 {
			t.Errorf("%s: %d of atStart, live and refused set, want exactly one", s.env, n)
		}
		if !variables[s.env] {
			t.Errorf("%s is not a variable of docs/configuration.md", s.env)
		}
		delete(variables, s.env)
		if got, want := documented[s.key()], [2]string{s.env, applies}; got != want {
			t.Errorf("docs/admin-api.md documents the setting %s as %v, want %v", s.key(), got, want)
		}
		delete(documented, s.key())
	}
	for v := range variables {
		t.Errorf("%s has no entry in envSettings: say what a setting of its name does", v)
	}
	for k := range documented {
		t.Errorf("docs/admin-api.md documents the setting %s, which envSettings does not have", k)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestCheckSetting: values are checked against what each variable takes,
// refused variables are refused, and other keys are left alone.
func TestCheckSetting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ key, value, err string }{
		{"default_rate_limit_capacity", "10", ""},
		{"default_rate_limit_capacity", "0", "invalid default_rate_limit_capacity: use an integer from 1 to 2147483647"},
		{"default_rate_limit_capacity", "2147483648", "invalid default_rate_limit_capacity: use an integer from 1 to 2147483647"},
		{"default_rate_limit_refill_rate", "0.5", ""},
		{"default_rate_limit_refill_rate", "0", "invalid default_rate_limit_refill_rate: use a positive number of tokens per second"},
		{"default_rate_limit_refill_rate", "NaN", "invalid default_rate_limit_refill_rate: use a positive number of tokens per second"},
		{"default_rate_limit_refill_rate", "+Inf", "invalid default_rate_limit_refill_rate: use a positive number of tokens per second"},
		{"event_log_retention_days", "0", ""},
		{"event_log_retention_days", "-1", "invalid event_log_retention_days: use a number of days from 0 (keep everything) to 36500"},
		{"event_log_retention_days", "36501", "invalid event_log_retention_days: use a number of days from 0 (keep everything) to 36500"},
		{"plugin_registry_url", "", ""},
		{"plugin_registry_url", "https://plugins.example.com/index.json", ""},
		{"plugin_registry_url", "file:///etc/passwd", "invalid plugin_registry_url: use an absolute URL (https, http)"},
		{"log_level", "DEBUG", ""},
		{"log_level", "trace", "invalid log_level: use debug, info, warn or error"},
		{"event_source", "firehose", ""},
		{"event_source", "relay", "invalid event_source: use jetstream or firehose"},
		{"jetstream_url", "off", ""},
		{"jetstream_url", "wss://jetstream.example.com/subscribe", ""},
		{"jetstream_url", "jetstream.example.com", "invalid jetstream_url: use an absolute URL (wss, ws, https, http), or off"},
		{"relay_url", "https://relay.example.com", ""},
		{"relay_url", "/relay", "invalid relay_url: use an absolute URL (https, http, wss, ws)"},
		{"plc_url", "https://plc.example.com", ""},
		{"plc_url", "wss://plc.example.com", "invalid plc_url: use an absolute URL (https, http)"},
		{"lexicon_dns_server", "", ""},
		{"lexicon_dns_server", "10.0.0.53:53", ""},
		{"lexicon_dns_server", "10.0.0.53", "invalid lexicon_dns_server: use host:port, or an empty value for the system resolver"},
		{"database_url", "sqlite://x.db", "database_url cannot be a setting: the settings are stored in the database it names. Set DATABASE_URL in the environment"},
		{"token_encryption_key", "x", "token_encryption_key cannot be a setting: " + refusedSecret + ". Set TOKEN_ENCRYPTION_KEY in the environment"},
		{"allow_private_networks", "true", "allow_private_networks cannot be a setting: " + refusedBoundary + ". Set ALLOW_PRIVATE_NETWORKS in the environment"},
		{"app_name", "anything", ""},
		{"DATABASE_URL", "not a key of ours", ""},
	} {
		err := checkSetting(tc.key, tc.value)
		if got := errString(err); got != tc.err {
			t.Errorf("%s=%q: %q, want %q", tc.key, tc.value, got, tc.err)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
