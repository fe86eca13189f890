package main

import (
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/lexview/lexview/appview"
)

// scope says which commands read a setting. A command reads the settings
// of its own scope and of every lower one.
type scope int

const (
	scopeNone     scope = iota // reads no configuration (version)
	scopeDatabase              // opens the database (migrate, admin bootstrap)
	scopeApp                   // builds the whole App (records import)
	scopeServe                 // serves it (serve): listeners and the public URL
)

// setting is one environment variable the command reads. This table is the
// only list of them: help output is generated from it, and a test checks it
// against configFromEnv, newLogger and docs/configuration.md.
type setting struct {
	env   string // the environment variable
	flag  string // the flag that overrides it; "" for none (secrets stay out of process listings)
	arg   string // the flag's value in help ("URL")
	def   string // the default, as help shows it
	help  string // what it means, one line
	scope scope  // the commands that read it
	// parse checks a value (from the flag or the environment); nil
	// accepts anything.
	parse func(string) error
}

// settings lists every environment variable, in the order help shows them.
func settings() []setting {
	return []setting{
		{env: "DATABASE_URL", flag: "database-url", arg: "URL", def: appview.DefaultDatabaseURL, scope: scopeDatabase,
			help: "sqlite://PATH, or postgres://USER:PASS@HOST:PORT/DB?sslmode=... (PostgreSQL 17+)"},
		{env: "LOG_LEVEL", flag: "log-level", arg: "LEVEL", def: "info", scope: scopeDatabase,
			help: "debug, info, warn or error", parse: func(v string) error { _, err := parseLevel(v); return err }},
		{env: "LOG_FORMAT", flag: "log-format", arg: "FORMAT", def: "text", scope: scopeDatabase,
			help: "text or json", parse: func(v string) error { _, err := parseJSONFormat(v); return err }},
		{env: "HOST", flag: "host", arg: "ADDR", def: appview.DefaultHost, scope: scopeServe,
			help: "bind address (0.0.0.0 for every interface)"},
		{env: "PORT", flag: "port", arg: "N", def: strconv.Itoa(appview.DefaultPort), scope: scopeServe,
			help: "bind port; 0 picks a free one (the address is logged)", parse: func(v string) error { _, err := parsePort(v); return err }},
		{env: "PUBLIC_URL", flag: "public-url", arg: "URL", def: "http://HOST:PORT", scope: scopeServe,
			help: "the base URL clients use; DPoP proofs are checked against it"},
		{env: "METRICS_ADDR", flag: "metrics-addr", arg: "ADDR", def: "off", scope: scopeServe,
			help: "serve Prometheus metrics at http://ADDR/metrics"},
		{env: "EVENT_SOURCE", flag: "event-source", arg: "KIND", def: appview.EventStreamJetstream, scope: scopeApp,
			help: "live event source: jetstream (JETSTREAM_URL) or firehose (verified commits from RELAY_URL)"},
		{env: "JETSTREAM_URL", flag: "jetstream-url", arg: "URL", def: appview.DefaultJetstreamURL, scope: scopeApp,
			help: "live event stream; off disables live ingestion"},
		{env: "RELAY_URL", flag: "relay-url", arg: "URL", def: appview.DefaultRelayURL, scope: scopeApp,
			help: "repository discovery for backfill; the firehose of EVENT_SOURCE=firehose"},
		{env: "INSTANCE_ID", flag: "instance-id", arg: "ID", def: "random", scope: scopeApp,
			help: "this process's name among the instances sharing a PostgreSQL database"},
		{env: "PLC_URL", flag: "plc-url", arg: "URL", def: appview.DefaultPLCURL, scope: scopeApp,
			help: "DID PLC directory"},
		{env: "LEXICON_DNS_SERVER", def: "system resolver", scope: scopeApp,
			help: "host:port of the DNS server asked for _lexicon TXT records of NSID authorities"},
		{env: "SESSION_SECRET", def: "random per process", scope: scopeApp,
			help: "signs session cookies; at least 32 bytes"},
		{env: "TOKEN_ENCRYPTION_KEY", def: "a key file beside a SQLite database", scope: scopeApp,
			help: "base64 of 32 bytes sealing every secret at rest (required with PostgreSQL)"},
		{env: "SERVICE_AUTH_AUDIENCES", def: "none", scope: scopeApp,
			help: "comma-separated aud values accepted in service-auth JWTs besides the instance's own did:web; * accepts any"},
		{env: "ADMIN_CLAIM", def: string(appview.ClaimWithToken), scope: scopeApp,
			help: "how a fresh instance is claimed: token (the claim token printed at start), first-request or command"},
		{env: "DEFAULT_RATE_LIMIT_CAPACITY", def: strconv.Itoa(appview.DefaultRateLimitCapacity), scope: scopeApp,
			help: "token-bucket size per API client"},
		{env: "DEFAULT_RATE_LIMIT_REFILL_RATE", def: strconv.FormatFloat(appview.DefaultRateLimitRefillRate, 'f', 1, 64), scope: scopeApp,
			help: "tokens added per second"},
		{env: "EVENT_LOG_RETENTION_DAYS", def: strconv.Itoa(appview.DefaultEventLogRetentionDays), scope: scopeApp,
			help: "event-log entries older than this are purged; 0 keeps everything"},
		{env: "PLUGIN_REGISTRY_URL", def: "none", scope: scopeApp,
			help: "URL of the plugin registry index behind GET /admin/plugins/official"},
		{env: "PLUGIN_DIR", def: "none", scope: scopeApp,
			help: "directory of file-based WASM plugins loaded at start (manifests with their modules)"},
		{env: "ALLOW_PRIVATE_NETWORKS", def: "false", scope: scopeApp,
			help: "true lets outbound calls reach loopback and private addresses (development only)"},
	}
}

// settingsFor returns the settings a command of scope sc reads.
func settingsFor(sc scope) []setting {
	var out []setting
	for _, s := range settings() {
		if s.scope <= sc {
			out = append(out, s)
		}
	}
	return out
}

// printSettings writes the flags and the environment variables of the
// settings ss, as help shows them, with the defaults of defs (a
// command's own, by variable) over theirs.
func printSettings(w io.Writer, ss []setting, defs map[string]string) {
	if len(ss) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nEnvironment (also read from a .env file in the working directory; real\nenvironment variables win over it, and the flags above win over both):")
	for _, s := range ss {
		def := s.def
		if d, ok := defs[s.env]; ok {
			def = d
		}
		fmt.Fprintf(tw, "  %s\t%s\n  \tdefault: %s\n", s.env, s.help, def)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nSee docs/configuration.md for every setting, and for those an instance\nsetting of the same name in lower case overrides (PUT /admin/settings/{key}).")
}

// parsePort reads a PORT value: 0 to 65535.
func parsePort(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%q is not an integer", v)
	}
	if n < 0 || n > 65535 {
		return 0, fmt.Errorf("%d is not a port (0 to 65535)", n)
	}
	return n, nil
}

// parseLevel reads a LOG_LEVEL value.
func parseLevel(v string) (slog.Level, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(v)); err != nil {
		return 0, fmt.Errorf("%q is not one of debug, info, warn, error", v)
	}
	return level, nil
}

// parseJSONFormat reads a LOG_FORMAT value and reports whether it is json.
func parseJSONFormat(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "json":
		return true, nil
	case "", "text":
		return false, nil
	}
	return false, fmt.Errorf("%q is not text or json", v)
}
