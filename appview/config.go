package appview

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lexview/lexview/appview/ingest"
	"github.com/lexview/lexview/appview/internal/core/serviceauth"
	"github.com/lexview/lexview/internal/netguard"
	"github.com/lexview/lexview/lexicon/lexresolve"
	"github.com/lexview/lexview/script"
	"github.com/lexview/lexview/script/luascript"
	"github.com/lexview/lexview/storage"
)

// Defaults for Config fields left at their zero value.
const (
	DefaultDatabaseURL  = "sqlite://data/appview.db"
	DefaultHost         = "127.0.0.1"
	DefaultPort         = 3000
	DefaultJetstreamURL = "wss://jetstream2.us-east.bsky.network/subscribe"
	DefaultRelayURL     = "https://bsky.network"
	// EventStreamJetstream and EventStreamFirehose are the values of
	// Config.Ingest.EventStream (EVENT_SOURCE).
	EventStreamJetstream         = "jetstream"
	EventStreamFirehose          = "firehose"
	DefaultPLCURL                = "https://plc.directory"
	DefaultLinkedRepoRefresh     = 30 * time.Minute
	DefaultLeaderLease           = 6 * time.Second
	DefaultPluginRegistryRefresh = time.Hour
	DefaultRateLimitCapacity     = 100
	DefaultRateLimitRefillRate   = 2.0
	DefaultEventLogRetentionDays = 30
	DefaultLexiconRecheck        = 6 * time.Hour

	// SessionSecretPlaceholder is the documented example value, refused
	// at start-up.
	SessionSecretPlaceholder = "change-me-in-production"
	minSessionSecretLen      = 32
)

// Config configures an App. Every field is optional: the zero Config runs
// an instance on ./data/appview.db that follows Jetstream. The command
// (cmd/appview) fills a Config from the environment, and every variable it
// reads has a field here (named beside each field, and in
// docs/configuration.md), so a program that embeds Lexview never needs
// the environment.
//
// The fields most programs set come first; the others are grouped by the
// part of the App they configure: Security, Ingest, Network, Clients,
// Scripts, Plugins, Cluster and Metrics.
//
// An instance setting named after a variable in lower case (stored through
// PUT /admin/settings/{key}) overrides its field: the rate-limit defaults,
// EventLogRetentionDays, Plugins.RegistryURL and the log level live, the
// event source's URLs, Network.PLCURL and Network.LexiconDNSServer when
// the App is built (docs/admin-api.md, section Settings).
type Config struct {
	// Store is the storage backend. When nil, DatabaseURL is opened, and
	// the App closes it on Shutdown.
	Store storage.Store
	// DatabaseURL is sqlite://PATH or postgres://...; used when Store is
	// nil (DATABASE_URL; default DefaultDatabaseURL).
	DatabaseURL string

	// Host and Port are where Run listens (HOST, PORT). Port -1 picks a
	// free port (the environment's PORT=0 maps to it); 0 means
	// DefaultPort.
	Host string
	Port int
	// PublicURL is the public base URL (PUBLIC_URL); default
	// http://Host:Port. DPoP proofs are checked against it. With Port -1
	// the default cannot name the port bound: call Listen first and set
	// Port to the listener's port (or set PublicURL).
	PublicURL string

	// Logger receives structured logs (LOG_LEVEL, LOG_FORMAT); default
	// slog.Default().
	Logger *slog.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time

	// XRPCMethods are Go handlers of XRPC methods, by method NSID. One
	// answers its method instead of a Lua script or the default list/get
	// (or create) behaviour; the method still needs its lexicon, which
	// gives it its route. API client identification, rate limiting and
	// user authentication run first (CallerDID names the user); an
	// unauthenticated procedure call is refused before the handler runs.
	XRPCMethods map[string]http.Handler
	// RecordHooks are Go record-event hooks, run in order by the batch
	// writer on every change after the Lua record scripts (see
	// RecordHook).
	RecordHooks []RecordHook

	// EventLogRetentionDays purges older event-log entries
	// (EVENT_LOG_RETENTION_DAYS). 0 means the default (30); a negative
	// value keeps everything.
	EventLogRetentionDays int
	// LinkedRepoRefresh is how often the sessions of active linked repo
	// grants are refreshed (DefaultLinkedRepoRefresh when zero); a refused
	// refresh moves the grant to needs_reauth.
	LinkedRepoRefresh time.Duration
	// StreamKeepalive is how often an idle Server-Sent Events stream (a
	// backfill job's progress) sends a keepalive comment; default 15 s.
	StreamKeepalive time.Duration

	Security SecurityConfig // secrets, service auth, claiming a fresh instance
	Ingest   IngestConfig   // the live event source and the relay
	Network  NetworkConfig  // outbound calls, identity and lexicon resolution
	Clients  ClientConfig   // API clients: identification and rate limits
	Scripts  ScriptConfig   // the Lua engine and script retries
	Plugins  PluginConfig   // WASM plugins
	Cluster  ClusterConfig  // several instances on one PostgreSQL database
	Metrics  MetricsConfig  // Prometheus metrics

	// sourceOrigins are the URLs (PLC, relay, Jetstream) whose origins the
	// configured sources' own clients may reach on a private network: set
	// when the default Network.HTTPClient is made, from the configuration
	// as the environment gave it (never from a setting).
	sourceOrigins []string
}

// SecurityConfig holds the instance's secrets and who may act as it.
type SecurityConfig struct {
	// SessionSecret signs dashboard cookies (SESSION_SECRET). Empty means
	// a random per-process secret (with a warning); the placeholder value
	// and values shorter than 32 bytes are refused.
	SessionSecret string
	// TokenEncryptionKey is base64 of 32 bytes sealing secrets at rest
	// (TOKEN_ENCRYPTION_KEY). Empty with SQLite: a key file beside the
	// database (see New); required with PostgreSQL.
	TokenEncryptionKey string
	// ServiceAuthAudiences are audiences accepted in service-auth JWTs
	// (admin API and XRPC) besides the instance's own DID, which is always
	// accepted (see App.InstanceDID): service DIDs, each also accepted with
	// a service fragment (did:web:example.com#bsky_appview)
	// (SERVICE_AUTH_AUDIENCES). AnyAudience accepts every audience, as the
	// interface specification's rule reads; a token minted for another
	// service then works here too.
	ServiceAuthAudiences []string
	// AdminClaim is how a fresh instance, with no admin user yet, gets its
	// super user (ADMIN_CLAIM); default ClaimWithToken.
	AdminClaim ClaimMode
	// ClaimCommand is the shell command that claims a fresh instance, as
	// its operator types it, with "<your DID>" where the DID goes: the
	// start-up warning of an unclaimed instance, the admin API's refusal
	// and the dashboard's sign-in page name it. The appview command sets
	// it to its own `admin bootstrap` as it was run (`go run ./cmd/appview
	// admin bootstrap --did <your DID>` under go run). Empty, they name
	// App.Bootstrap, the Go API a program embedding Lexview calls.
	ClaimCommand string
}

// IngestConfig chooses where live records come from.
type IngestConfig struct {
	// EventStream chooses the live event source (EVENT_SOURCE):
	// EventStreamJetstream (the default: unverified records from
	// JetstreamURL) or EventStreamFirehose (verified commits from
	// RelayURL's com.atproto.sync.subscribeRepos). EventSource overrides
	// it.
	EventStream string
	// JetstreamURL is the live event stream (JETSTREAM_URL); "off"
	// disables ingestion. Default DefaultJetstreamURL.
	JetstreamURL string
	// RelayURL is used for repository discovery in backfill, and is the
	// firehose of EventStreamFirehose (RELAY_URL). Default
	// DefaultRelayURL.
	RelayURL string
	// EventSource is the live event stream; default Jetstream at
	// JetstreamURL (none when JetstreamURL is "off"). Its Name keys its
	// stored cursor (ingest.CursorKey), its metrics and its status, so it
	// never resumes from another source's position.
	EventSource ingest.Source
}

// NetworkConfig is how the App reaches the network: its outbound HTTP
// client, identity resolution and lexicon resolution.
type NetworkConfig struct {
	// PLCURL is the DID PLC directory (PLC_URL); default DefaultPLCURL.
	PLCURL string
	// HTTPClient makes outbound calls (PDSes, relays, PLC); default a
	// client with timeouts that refuses private, loopback and other
	// non-public addresses. With the default, the configured sources'
	// own clients (the PLC lookups and operations, the firehose or
	// Jetstream connection, backfill's relay calls) may also reach the
	// origins, scheme, host and port, of PLCURL, Ingest.RelayURL and
	// Ingest.JetstreamURL wherever they are; targets that clients or DID
	// documents choose (the XRPC proxy, network lexicons, PDSes, labelers)
	// never get that exemption.
	HTTPClient *http.Client
	// AllowPrivateNetworks lets the default HTTPClient reach loopback and
	// private addresses, and labeler subscriptions use plain-http
	// endpoints (local development, tests) (ALLOW_PRIVATE_NETWORKS).
	AllowPrivateNetworks bool
	// Directory resolves DIDs and handles; default an indigo directory on
	// PLCURL with an in-memory cache.
	Directory identity.Directory
	// LexiconDNSServer is host:port of the DNS server asked for the
	// `_lexicon.<authority>` TXT records of NSID authorities (network
	// lexicons, the XRPC proxy) (LEXICON_DNS_SERVER); "" is the system
	// resolver.
	LexiconDNSServer string
	// LexiconResolver resolves NSIDs to their authorities and published
	// lexicons; default the network resolver (DNS at LexiconDNSServer,
	// Directory, HTTPClient) with an authority cache of an hour (30 s for
	// failures).
	LexiconResolver lexresolve.Resolver
	// LexiconRecheck is how often tracked network lexicons are fetched
	// again to catch revisions the live event source missed; default
	// DefaultLexiconRecheck.
	LexiconRecheck time.Duration
}

// ClientConfig is how XRPC callers are identified and rate limited.
type ClientConfig struct {
	// Identifier identifies the API client of each XRPC request; default
	// (nil): the API clients stored in the instance (App.Clients, the
	// admin API).
	Identifier ClientIdentifier
	// DefaultRateLimitCapacity and DefaultRateLimitRefillRate are the
	// token bucket of a stored client that sets none
	// (DEFAULT_RATE_LIMIT_CAPACITY, DEFAULT_RATE_LIMIT_REFILL_RATE;
	// defaults DefaultRateLimitCapacity and DefaultRateLimitRefillRate).
	DefaultRateLimitCapacity   int
	DefaultRateLimitRefillRate float64
}

// ScriptConfig is how Lua scripts run.
type ScriptConfig struct {
	// Engine runs Lua scripts; nil uses the gopher-lua engine
	// (script/luascript) with the specification's limits.
	Engine script.Engine
	// Retry bounds the automatic retries of failed record-event scripts
	// (default 3 attempts, 2 s backoff doubling). A failure waits as a
	// stored pending retry and becomes a dead letter, for an operator,
	// only once every attempt has failed.
	Retry RetryPolicy
	// IndexSuggestionMinRecords: a db.query or db.count that scans a
	// collection where a value index would serve it is logged, and
	// listed in GET /admin/indexes/suggestions, when the collection holds
	// at least this many records (docs/queries.md#suggestions). 0 means
	// 10,000; a negative value suggests every such scan.
	IndexSuggestionMinRecords int64
}

// PluginConfig is where WASM plugins come from and what they may use
// (docs/plugins.md).
type PluginConfig struct {
	// RegistryURL is the official plugin registry index behind
	// GET /admin/plugins/official (PLUGIN_REGISTRY_URL); "" leaves the
	// official list empty.
	RegistryURL string
	// RegistryRefresh is how often the registry index is fetched again
	// (DefaultPluginRegistryRefresh when zero).
	RegistryRefresh time.Duration
	// Dir holds file-based plugins, loaded at start: each manifest
	// (*.json, or */manifest.json) with its module beside it (PLUGIN_DIR);
	// "" for none.
	Dir string
	// CallTimeout bounds one plugin call (default 2 s; a script's shorter
	// deadline wins) and MemoryPages an instance's memory in 64 KiB pages
	// (default 2048, 128 MiB).
	CallTimeout time.Duration
	MemoryPages uint32
	// MaxMemory bounds the memory of every plugin instance together, in
	// bytes (default 512 MiB; the setting plugins.max_memory_bytes
	// overrides it); one plugin's instances get at most half of it.
	MaxMemory int64
}

// ClusterConfig tunes instances that share a PostgreSQL database
// (docs/operations.md).
type ClusterConfig struct {
	// InstanceID names this process among the instances sharing a
	// PostgreSQL database (in the leader's lease, the heartbeats, the
	// metrics and GET /ready) (INSTANCE_ID); "" for a random one per
	// start.
	InstanceID string
	// LeaderLease is the lifetime of the leader's lease on PostgreSQL:
	// the longest a dead leader keeps its singleton work from the others
	// (DefaultLeaderLease when zero).
	LeaderLease time.Duration
	// ChangeReconcile is how often every configuration cache is read
	// again, as a safety net for changes missed. With PostgreSQL, changes
	// made through any instance arrive at once through LISTEN/NOTIFY, and
	// the default is 30 s; with SQLite this is how changes made by another
	// process arrive, and the default is 5 s.
	ChangeReconcile time.Duration
}

// MetricsConfig is where Lexview's Prometheus metrics go.
type MetricsConfig struct {
	// Addr, when set, serves Prometheus metrics at /metrics there, on a
	// listener of its own, with Go runtime and process metrics
	// (METRICS_ADDR).
	Addr string
	// Registerer, when set, receives Lexview's metrics (not the Go runtime
	// and process ones, which are the program's), for an embedder that
	// serves metrics itself; for example prometheus.DefaultRegisterer or a
	// prometheus.NewRegistry(). They are unregistered when Shutdown
	// completes. New fails if they cannot be registered (for example while
	// another App's are registered there). Works with or without Addr.
	Registerer prometheus.Registerer
	// HistoryInterval is how often the in-memory history behind the
	// dashboard's charts and status indicator samples the instance
	// (GET /admin/stats/history); default 10 s. Its hour window keeps 360
	// samples and its day window a point every 30 samples, 288 of them,
	// so another interval scales both spans.
	HistoryInterval time.Duration
}

// RetryPolicy bounds the automatic retries of a failed record-event
// script (Config.Scripts.Retry): the failure waits as a stored pending retry,
// and becomes a dead letter, for an operator, once every attempt has
// failed. Zero fields take their defaults.
type RetryPolicy struct {
	Attempts int           // total attempts, the first included; default 3 (1: no retry)
	Backoff  time.Duration // wait before the second attempt, doubling; default 2 s
}

// AnyAudience in Config.Security.ServiceAuthAudiences accepts service-auth JWTs
// whatever their audience.
const AnyAudience = serviceauth.AnyAudience

// ClaimMode says how a fresh instance gets its super user.
type ClaimMode string

// The claim modes.
const (
	// ClaimWithToken: the first authenticated admin request that also
	// carries the claim token (header X-Claim-Token) makes its caller the
	// super user. The token is derived from the key sealing secrets at
	// rest (the same at every start until the instance is claimed),
	// logged at start and given by App.ClaimToken; `appview admin
	// bootstrap` (App.Bootstrap) works too.
	ClaimWithToken ClaimMode = "token"
	// ClaimFirstRequest: the first authenticated admin request makes its
	// caller the super user, as the interface specification reads. Anyone
	// who can reach the instance first owns it.
	ClaimFirstRequest ClaimMode = "first-request"
	// ClaimByCommand: only `appview admin bootstrap` (appview.Bootstrap,
	// App.Bootstrap) makes the super user.
	ClaimByCommand ClaimMode = "command"
)

// InstanceDID is the DID PublicURL names: did:web of its host (a port is
// percent-encoded, as did:web requires). It is the instance's DID until an
// operator makes another domain primary; App.InstanceDID is the live one.
func (c Config) InstanceDID() string {
	u, err := url.Parse(c.publicURL())
	if err != nil || u.Host == "" {
		return ""
	}
	return "did:web:" + strings.ReplaceAll(strings.ToLower(u.Host), ":", "%3A")
}

// listenAddr is host:port of Host and Port with their defaults (Port -1:
// port 0, a free port).
func (c Config) listenAddr() string {
	host, port := c.Host, c.Port
	if host == "" {
		host = DefaultHost
	}
	switch {
	case port == 0:
		port = DefaultPort
	case port < 0:
		port = 0
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// publicURL is PublicURL or its default, http://Host:Port.
func (c Config) publicURL() string {
	if c.PublicURL != "" {
		return c.PublicURL
	}
	return "http://" + c.listenAddr()
}

// withStorageDefaults fills in what opening the database needs: its URL,
// the logger and the clock.
func (c Config) withStorageDefaults() Config {
	if c.DatabaseURL == "" {
		c.DatabaseURL = DefaultDatabaseURL
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// withDefaults returns a copy of c with every unset field filled in.
func (c Config) withDefaults() Config {
	c = c.withStorageDefaults()
	if c.Host == "" {
		c.Host = DefaultHost
	}
	if c.Port == 0 {
		c.Port = DefaultPort
	}
	c.PublicURL = c.publicURL()
	if c.Security.AdminClaim == "" {
		c.Security.AdminClaim = ClaimWithToken
	}
	if c.Ingest.EventStream == "" {
		c.Ingest.EventStream = EventStreamJetstream
	}
	if c.Ingest.JetstreamURL == "" {
		c.Ingest.JetstreamURL = DefaultJetstreamURL
	}
	if c.Ingest.RelayURL == "" {
		c.Ingest.RelayURL = DefaultRelayURL
	}
	if c.Network.PLCURL == "" {
		c.Network.PLCURL = DefaultPLCURL
	}
	if c.Clients.DefaultRateLimitCapacity == 0 {
		c.Clients.DefaultRateLimitCapacity = DefaultRateLimitCapacity
	}
	if c.Clients.DefaultRateLimitRefillRate == 0 {
		c.Clients.DefaultRateLimitRefillRate = DefaultRateLimitRefillRate
	}
	if c.Cluster.LeaderLease <= 0 {
		c.Cluster.LeaderLease = DefaultLeaderLease
	}
	if c.LinkedRepoRefresh <= 0 {
		c.LinkedRepoRefresh = DefaultLinkedRepoRefresh
	}
	if c.Plugins.RegistryRefresh <= 0 {
		c.Plugins.RegistryRefresh = DefaultPluginRegistryRefresh
	}
	if c.Network.LexiconRecheck <= 0 {
		c.Network.LexiconRecheck = DefaultLexiconRecheck
	}
	if c.EventLogRetentionDays == 0 {
		c.EventLogRetentionDays = DefaultEventLogRetentionDays
	}
	if c.Scripts.Engine == nil {
		c.Scripts.Engine = luascript.New(luascript.Options{Logger: c.Logger, Now: c.Now})
	}
	if c.Network.HTTPClient == nil {
		c = c.withGuardedHTTPClient()
	}
	if c.Network.Directory == nil {
		base := &identity.BaseDirectory{
			PLCURL:                 c.Network.PLCURL,
			HTTPClient:             *c.sourceHTTPClient(c.Network.PLCURL),
			SkipHandleVerification: true,
			TryAuthoritativeDNS:    false,
			UserAgent:              "lexview/" + Version,
		}
		c.Network.Directory = identity.NewCacheDirectory(base, 250_000, 24*time.Hour, 2*time.Minute, 5*time.Minute)
	}
	if c.Network.LexiconResolver == nil {
		c.Network.LexiconResolver = lexresolve.New(lexresolve.Options{
			TXT: lexresolve.NewTXTResolver(c.Network.LexiconDNSServer), Directory: c.Network.Directory, HTTP: c.Network.HTTPClient,
			UserAgent: "lexview/" + Version, Now: c.Now,
		})
	}
	return c
}

// withGuardedHTTPClient returns c with the default Network.HTTPClient:
// timeouts, and private, loopback and other non-public addresses refused
// unless Network.AllowPrivateNetworks. It notes the URLs of Network.PLCURL,
// Ingest.RelayURL and Ingest.JetstreamURL (their defaults when unset),
// whose origins the sources' own clients may reach (sourceHTTPClient).
func (c Config) withGuardedHTTPClient() Config {
	or := func(v, def string) string {
		if v == "" {
			return def
		}
		return v
	}
	c.Network.HTTPClient = c.guardedHTTPClient()
	c.sourceOrigins = []string{or(c.Network.PLCURL, DefaultPLCURL), or(c.Ingest.RelayURL, DefaultRelayURL),
		or(c.Ingest.JetstreamURL, DefaultJetstreamURL)}
	return c
}

// guardedHTTPClient is a guarded client (see withGuardedHTTPClient) that
// may also reach the origins of allow.
func (c Config) guardedHTTPClient(allow ...string) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: netguard.NewTransport(netguard.Options{
		AllowPrivate: c.Network.AllowPrivateNetworks,
		// The operator chose these; they may live on a private network.
		// Only their origins: other ports of their hosts stay guarded.
		AllowOrigins: allow,
	})}
}

// sourceHTTPClient is the client of a configured source at sourceURL (the
// PLC directory, the relay, Jetstream): with the default
// Network.HTTPClient, a guarded client that may also reach sourceURL's
// origin when it is one the environment configured (sourceOrigins);
// otherwise Network.HTTPClient.
func (c Config) sourceHTTPClient(sourceURL string) *http.Client {
	origin := netguard.OriginOf(sourceURL)
	for _, u := range c.sourceOrigins {
		if origin != "" && netguard.OriginOf(u) == origin {
			return c.guardedHTTPClient(sourceURL)
		}
	}
	return c.Network.HTTPClient
}

// validate refuses settings that must not run; unset fields are valid
// (their defaults are).
func (c Config) validate() error {
	if c.Security.SessionSecret == SessionSecretPlaceholder {
		return errors.New("SESSION_SECRET is the documented placeholder; set a random value of at least 32 bytes")
	}
	if c.Security.SessionSecret != "" && len(c.Security.SessionSecret) < minSessionSecretLen {
		return fmt.Errorf("SESSION_SECRET must be at least %d bytes, got %d", minSessionSecretLen, len(c.Security.SessionSecret))
	}
	if c.Clients.DefaultRateLimitCapacity < 0 || c.Clients.DefaultRateLimitRefillRate < 0 {
		return errors.New("rate-limit defaults must not be negative")
	}
	switch c.Security.AdminClaim {
	case "", ClaimWithToken, ClaimFirstRequest, ClaimByCommand:
	default:
		return fmt.Errorf("admin claim mode %q is not one of %q, %q, %q",
			c.Security.AdminClaim, ClaimWithToken, ClaimFirstRequest, ClaimByCommand)
	}
	if c.Port > 65535 || c.Port < -1 {
		return fmt.Errorf("port %d out of range", c.Port)
	}
	return nil
}
