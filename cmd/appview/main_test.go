package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"DATABASE_URL": "postgres://u:p@127.0.0.1:5432/db", "HOST": "0.0.0.0", "PORT": "0",
		"PUBLIC_URL": "https://appview.example", "JETSTREAM_URL": "off", "RELAY_URL": "https://relay.example",
		"PLC_URL": "http://127.0.0.1:2582", "DEFAULT_RATE_LIMIT_CAPACITY": "7", "DEFAULT_RATE_LIMIT_REFILL_RATE": "0.5",
		"EVENT_LOG_RETENTION_DAYS": "0", "METRICS_ADDR": "127.0.0.1:9090",
		"SERVICE_AUTH_AUDIENCES": "did:web:a.example, did:web:b.example",
	}
	cfg, err := configFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DatabaseURL != env["DATABASE_URL"] || cfg.Host != "0.0.0.0" || cfg.Port != -1 || cfg.PublicURL != env["PUBLIC_URL"] ||
		cfg.Ingest.JetstreamURL != "off" || cfg.Ingest.RelayURL != env["RELAY_URL"] || cfg.Network.PLCURL != env["PLC_URL"] ||
		cfg.Clients.DefaultRateLimitCapacity != 7 || cfg.Clients.DefaultRateLimitRefillRate != 0.5 || cfg.EventLogRetentionDays != -1 ||
		cfg.Metrics.Addr != env["METRICS_ADDR"] || len(cfg.Security.ServiceAuthAudiences) != 2 || cfg.Security.ServiceAuthAudiences[1] != "did:web:b.example" {
		t.Fatalf("mapped config: %+v", cfg)
	}
	env = map[string]string{"PORT": "eighty", "DEFAULT_RATE_LIMIT_REFILL_RATE": "fast"}
	if _, err := configFromEnv(func(k string) string { return env[k] }); err == nil ||
		!strings.Contains(err.Error(), "PORT") || !strings.Contains(err.Error(), "REFILL") {
		t.Fatalf("bad numbers: %v", err)
	}
	env = map[string]string{"PORT": "70000"}
	if _, err := configFromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "PORT: 70000 is not a port") {
		t.Fatalf("port out of range: %v", err)
	}
}

func TestLoadDotEnv(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".env")
	os.WriteFile(path, []byte("# comment\nLEXVIEW_T_A=from-file\nexport LEXVIEW_T_B=\"quoted\\tvalue\"\nLEXVIEW_T_C='single' \nLEXVIEW_T_D=plain # trailing\n\n"), 0o600)
	t.Setenv("LEXVIEW_T_A", "from-env")
	for _, k := range []string{"LEXVIEW_T_B", "LEXVIEW_T_C", "LEXVIEW_T_D"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	if err := loadDotEnv(path); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"LEXVIEW_T_A": "from-env", "LEXVIEW_T_B": "quoted\tvalue", "LEXVIEW_T_C": "single", "LEXVIEW_T_D": "plain"} {
		if got := os.Getenv(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if err := loadDotEnv(filepath.Join(t.TempDir(), "missing")); err != nil {
		t.Fatalf("missing file: %v", err)
	}
	os.WriteFile(path, []byte("NOEQUALS\n"), 0o600)
	if err := loadDotEnv(path); err == nil {
		t.Fatal("malformed line accepted")
	}
}

func TestCommands(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"version"}, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "lexview ") {
		t.Fatalf("version: %d %q", code, out.String())
	}
	if code := run([]string{"frobnicate"}, &out, &errOut); code != 2 {
		t.Fatalf("unknown command exit %d", code)
	}
	if code := run(nil, &out, &errOut); code != 2 {
		t.Fatalf("no command exit %d", code)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("DATABASE_URL", "sqlite://"+filepath.Join(dir, "m.db"))
	t.Setenv("LOG_LEVEL", "error")
	if code := run([]string{"migrate"}, &out, &errOut); code != 0 {
		t.Fatalf("migrate exit %d: %s", code, errOut.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "m.db")); err != nil {
		t.Fatalf("database not created: %v", err)
	}
	t.Setenv("LOG_LEVEL", "loud")
	if code := run([]string{"migrate"}, &out, &errOut); code != 1 {
		t.Fatalf("bad LOG_LEVEL exit %d", code)
	}
	t.Setenv("LOG_LEVEL", "")
	t.Setenv("LOG_FORMAT", "xml")
	errOut.Reset()
	if code := run([]string{"migrate"}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "LOG_FORMAT") {
		t.Fatalf("bad LOG_FORMAT exit %d: %s", code, errOut.String())
	}
}
