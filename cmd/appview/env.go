package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/lexview/lexview/appview"
)

// loadDotEnv reads KEY=VALUE lines from path into the environment, without
// overriding variables that are already set. A missing file is not an error.
func loadDotEnv(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		key, value, ok := strings.Cut(line, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return fmt.Errorf("%s:%d: expected KEY=VALUE", path, n)
		}
		value = unquote(strings.TrimSpace(value))
		if _, set := os.LookupEnv(key); !set {
			os.Setenv(key, value)
		}
	}
	return sc.Err()
}

// unquote strips matching single or double quotes; double-quoted values
// get Go escape handling, and unquoted values lose a trailing " # comment".
func unquote(v string) string {
	if len(v) >= 2 {
		switch {
		case v[0] == '"' && v[len(v)-1] == '"':
			if s, err := strconv.Unquote(v); err == nil {
				return s
			}
			return v[1 : len(v)-1]
		case v[0] == '\'' && v[len(v)-1] == '\'':
			return v[1 : len(v)-1]
		}
	}
	if i := strings.Index(v, " #"); i >= 0 {
		v = strings.TrimSpace(v[:i])
	}
	return v
}

// configFromEnv maps the environment onto appview.Config.
func configFromEnv(getenv func(string) string) (appview.Config, error) {
	cfg := appview.Config{
		DatabaseURL: getenv("DATABASE_URL"),
		Host:        getenv("HOST"),
		PublicURL:   getenv("PUBLIC_URL"),
		Security: appview.SecurityConfig{
			SessionSecret:      getenv("SESSION_SECRET"),
			TokenEncryptionKey: getenv("TOKEN_ENCRYPTION_KEY"),
			AdminClaim:         appview.ClaimMode(getenv("ADMIN_CLAIM")),
		},
		Ingest: appview.IngestConfig{
			EventStream:  getenv("EVENT_SOURCE"),
			JetstreamURL: getenv("JETSTREAM_URL"),
			RelayURL:     getenv("RELAY_URL"),
		},
		Network: appview.NetworkConfig{
			PLCURL:               getenv("PLC_URL"),
			LexiconDNSServer:     getenv("LEXICON_DNS_SERVER"),
			AllowPrivateNetworks: getenv("ALLOW_PRIVATE_NETWORKS") == "true",
		},
		Plugins: appview.PluginConfig{RegistryURL: getenv("PLUGIN_REGISTRY_URL"), Dir: getenv("PLUGIN_DIR")},
		Cluster: appview.ClusterConfig{InstanceID: getenv("INSTANCE_ID")},
		Metrics: appview.MetricsConfig{Addr: getenv("METRICS_ADDR")},
	}
	for _, aud := range strings.Split(getenv("SERVICE_AUTH_AUDIENCES"), ",") {
		if aud = strings.TrimSpace(aud); aud != "" {
			cfg.Security.ServiceAuthAudiences = append(cfg.Security.ServiceAuthAudiences, aud)
		}
	}
	var errs []error
	intVar := func(name string, dst *int) {
		if v := getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not an integer", name, v))
			}
			*dst = n
		}
	}
	if v := getenv("PORT"); v != "" {
		port, err := parsePort(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("PORT: %w", err))
		}
		cfg.Port = port
		if port == 0 {
			cfg.Port = -1 // any free port
		}
	}
	intVar("DEFAULT_RATE_LIMIT_CAPACITY", &cfg.Clients.DefaultRateLimitCapacity)
	if v := getenv("DEFAULT_RATE_LIMIT_REFILL_RATE"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("DEFAULT_RATE_LIMIT_REFILL_RATE: %q is not a number", v))
		}
		cfg.Clients.DefaultRateLimitRefillRate = f
	}
	intVar("EVENT_LOG_RETENTION_DAYS", &cfg.EventLogRetentionDays)
	if getenv("EVENT_LOG_RETENTION_DAYS") == "0" {
		cfg.EventLogRetentionDays = -1 // keep everything
	}
	return cfg, errors.Join(errs...)
}

// newLogger builds the process logger from LOG_LEVEL and LOG_FORMAT. It
// writes to w (standard error).
func newLogger(getenv func(string) string, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if v := getenv("LOG_LEVEL"); v != "" {
		var err error
		if level, err = parseLevel(v); err != nil {
			return nil, fmt.Errorf("LOG_LEVEL: %w", err)
		}
	}
	asJSON, err := parseJSONFormat(getenv("LOG_FORMAT"))
	if err != nil {
		return nil, fmt.Errorf("LOG_FORMAT: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	if asJSON {
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
}
