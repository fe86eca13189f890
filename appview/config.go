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
	// Config.EventStream (EVENT_SOURCE).
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

// Config configures an App. Every field is optional; the zero value runs
// an instance on ./data/appview.db. Each environment variable the command
// reads has a field here, so a library user never needs the environment.
// An instance setting named after a variable in lower case (stored through
// PUT /admin/settings/{key}) overrides its field: the rate-limit defaults,
// EventLogRetentionDays, PluginRegistryURL and the log level live, the
// event source's URLs, PLCURL and LexiconDNSServer when the App is built
// (docs/admin-api.md, section Settings).
type Config struct {
	// Store is the storage backend. When nil, DatabaseURL is opened, and
	// the App closes it on Shutdown.
	Store storage.Store
	// DatabaseURL is sqlite://PATH or postgres://...; used when Store is nil.
	DatabaseURL string

	// Host and Port are where Run listens. Port -1 picks a free port
	// (the environment's PORT=0 maps to it); 0 means DefaultPort.
	Host string
	Port int
	// PublicURL is the public base URL; default http://Host:Port. DPoP
	// proofs are checked against it. With Port -1 the default cannot name
	// the port bound: call Listen first and set Port to the listener's
	// port (or set PublicURL).
	PublicURL string

	// SessionSecret signs dashboard cookies. Empty means a random
	// per-process secret (with a warning); the placeholder value and values
	// shorter than 32 bytes are refused.
	SessionSecret string
	// TokenEncryptionKey is base64 of 32 bytes sealing secrets at rest.
	TokenEncryptionKey string

	// EventStream chooses the live event source: EventStreamJetstream
	// (the default: unverified records from JetstreamURL) or
	// EventStreamFirehose (verified commits from RelayURL's
	// com.atproto.sync.subscribeRepos). Config.EventSource overrides it.
	EventStream string
	// JetstreamURL is the live event stream; "off" disables ingestion.
	JetstreamURL string
	// RelayURL is used for repository discovery in backfill, and is the
	// firehose of EventStreamFirehose.
	RelayURL string
	// PLCURL is the DID PLC directory.
	PLCURL string

	// DefaultRateLimitCapacity and DefaultRateLimitRefillRate are the
	// per-client token bucket defaults.
	DefaultRateLimitCapacity   int
	DefaultRateLimitRefillRate float64

	// EventLogRetentionDays purges older event-log entries. 0 means the
	// default (30); a negative value keeps everything.
	EventLogRetentionDays int

	// MetricsAddr, when set, serves Prometheus metrics at /metrics there,
	// on a listener of its own (with Go runtime and process metrics).
	MetricsAddr string
	// MetricsRegisterer, when set, receives Lexview's metrics (not the Go
	// runtime and process ones, which are the program's), for an embedder
	// that serves metrics itself; for example prometheus.DefaultRegisterer
	// or a prometheus.NewRegistry(). They are unregistered when Shutdown
	// completes. New fails if they cannot be registered (for example while
	// another App's are registered there). Works with or without
	// MetricsAddr.
	MetricsRegisterer prometheus.Registerer

	// Logger receives structured logs; default slog.Default().
	Logger *slog.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
	// ScriptEngine runs Lua scripts; nil uses the gopher-lua engine
	// (script/luascript) with the specification's limits.
	ScriptEngine script.Engine
	// ScriptRetry bounds the automatic retries of failed record-event
	// scripts (default 3 attempts, 2 s backoff doubling). A failure waits
	// as a stored pending retry and becomes a dead letter, for an
	// operator, only once every attempt has failed.
	ScriptRetry RetryPolicy
	// HTTPClient makes outbound calls (PDSes, relays, PLC); default a
	// client with timeouts that refuses private, loopback and other
	// non-public addresses (except at the origins, scheme, host and port,
	// of PLCURL, RelayURL and JetstreamURL).
	HTTPClient *http.Client
	// AllowPrivateNetworks lets the default HTTPClient reach loopback and
	// private addresses, and labeler subscriptions use plain-http
	// endpoints (local development, tests).
	AllowPrivateNetworks bool
	// Directory resolves DIDs and handles; default an indigo directory on
	// PLCURL with an in-memory cache.
	Directory identity.Directory
	// LexiconDNSServer is host:port of the DNS server asked for the
	// `_lexicon.<authority>` TXT records of NSID authorities (network
	// lexicons, the XRPC proxy); "" is the system resolver.
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
	// ClientIdentifier identifies the API client of each XRPC request;
	// default: the API clients stored in the instance (admin API).
	ClientIdentifier ClientIdentifier

	// EventSource is the live event stream; default Jetstream at
	// JetstreamURL (none when JetstreamURL is "off"). Its Name keys its
	// stored cursor (ingest.CursorKey), its metrics and its status, so it
	// never resumes from another source's position.
	EventSource ingest.Source

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

	// StreamKeepalive is how often an idle Server-Sent Events stream (a
	// backfill job's progress) sends a keepalive comment; default 15 s.
	StreamKeepalive time.Duration

	// InstanceID names this process among the instances sharing a
	// PostgreSQL database (in the leader's lease, the heartbeats, the
	// metrics and GET /ready); "" for a random one per start.
	InstanceID string
	// LeaderLease is the lifetime of the leader's lease on PostgreSQL:
	// the longest a dead leader keeps its singleton work from the others
	// (DefaultLeaderLease when zero; docs/operations.md).
	LeaderLease time.Duration
	// ChangeReconcile is how often every configuration cache is read
	// again, as a safety net for changes missed. With PostgreSQL, changes
	// made through any instance arrive at once through LISTEN/NOTIFY, and
	// the default is 30 s; with SQLite this is how changes made by another
	// process arrive, and the default is 5 s.
	ChangeReconcile time.Duration

	// LinkedRepoRefresh is how often the sessions of active linked repo
	// grants are refreshed (DefaultLinkedRepoRefresh when zero); a refused
	// refresh moves the grant to needs_reauth.
	LinkedRepoRefresh time.Duration

	// PluginRegistryURL is the official plugin registry index behind
	// GET /admin/plugins/official (docs/plugins.md); "" leaves the official
	// list empty.
	PluginRegistryURL string
	// PluginRegistryRefresh is how often the registry index is fetched
	// again (DefaultPluginRegistryRefresh when zero).
	PluginRegistryRefresh time.Duration
	// PluginDir holds file-based plugins, loaded at start: each manifest
	// (*.json, or */manifest.json) with its module beside it; "" for none.
	PluginDir string
	// PluginCallTimeout bounds one plugin call (default 2 s; a script's
	// shorter deadline wins) and PluginMemoryPages an instance's memory
	// in 64 KiB pages (default 2048, 128 MiB).
	PluginCallTimeout time.Duration
	PluginMemoryPages uint32

	// ServiceAuthAudiences are audiences accepted in service-auth JWTs
	// (admin API and XRPC) besides the instance's own DID, which is always
	// accepted (see App.InstanceDID): service DIDs, each also accepted with a
	// service fragment (did:web:example.com#bsky_appview). AnyAudience
	// accepts every audience, as the interface specification's rule reads;
	// a token minted for another service then works here too.
	ServiceAuthAudiences []string

	// AdminClaim is how a fresh instance, with no admin user yet, gets its
	// super user; default ClaimWithToken.
	AdminClaim ClaimMode
}

// RetryPolicy bounds the automatic retries of a failed record-event
// script (Config.ScriptRetry): the failure waits as a stored pending retry,
// and becomes a dead letter, for an operator, once every attempt has
// failed. Zero fields take their defaults.
type RetryPolicy struct {
	Attempts int           // total attempts, the first included; default 3 (1: no retry)
	Backoff  time.Duration // wait before the second attempt, doubling; default 2 s
}

// AnyAudience in Config.ServiceAuthAudiences accepts service-auth JWTs
// whatever their audience.
const AnyAudience = serviceauth.AnyAudience

// ClaimMode says how a fresh instance gets its super user.
type ClaimMode string

// The claim modes.
const (
	// ClaimWithToken: the first authenticated admin request that also
	// carries the claim token (header X-Claim-Token) makes its caller the
	// super user. The token is made at start, logged and given by
	// App.ClaimToken; `appview admin bootstrap` works too.
	ClaimWithToken ClaimMode = "token"
	// ClaimFirstRequest: the first authenticated admin request makes its
	// caller the super user, as the interface specification reads. Anyone
	// who can reach the instance first owns it.
	ClaimFirstRequest ClaimMode = "first-request"
	// ClaimByCommand: only `appview admin bootstrap` (appview.Bootstrap)
	// makes the super user.
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
	if c.AdminClaim == "" {
		c.AdminClaim = ClaimWithToken
	}
	if c.EventStream == "" {
		c.EventStream = EventStreamJetstream
	}
	if c.JetstreamURL == "" {
		c.JetstreamURL = DefaultJetstreamURL
	}
	if c.RelayURL == "" {
		c.RelayURL = DefaultRelayURL
	}
	if c.PLCURL == "" {
		c.PLCURL = DefaultPLCURL
	}
	if c.DefaultRateLimitCapacity == 0 {
		c.DefaultRateLimitCapacity = DefaultRateLimitCapacity
	}
	if c.DefaultRateLimitRefillRate == 0 {
		c.DefaultRateLimitRefillRate = DefaultRateLimitRefillRate
	}
	if c.LeaderLease <= 0 {
		c.LeaderLease = DefaultLeaderLease
	}
	if c.LinkedRepoRefresh <= 0 {
		c.LinkedRepoRefresh = DefaultLinkedRepoRefresh
	}
	if c.PluginRegistryRefresh <= 0 {
		c.PluginRegistryRefresh = DefaultPluginRegistryRefresh
	}
	if c.LexiconRecheck <= 0 {
		c.LexiconRecheck = DefaultLexiconRecheck
	}
	if c.EventLogRetentionDays == 0 {
		c.EventLogRetentionDays = DefaultEventLogRetentionDays
	}
	if c.ScriptEngine == nil {
		c.ScriptEngine = luascript.New(luascript.Options{Logger: c.Logger, Now: c.Now})
	}
	if c.HTTPClient == nil {
		c.HTTPClient = c.guardedHTTPClient()
	}
	if c.Directory == nil {
		base := &identity.BaseDirectory{
			PLCURL:                 c.PLCURL,
			HTTPClient:             *c.HTTPClient,
			SkipHandleVerification: true,
			TryAuthoritativeDNS:    false,
			UserAgent:              "lexview/" + Version,
		}
		c.Directory = identity.NewCacheDirectory(base, 250_000, 24*time.Hour, 2*time.Minute, 5*time.Minute)
	}
	if c.LexiconResolver == nil {
		c.LexiconResolver = lexresolve.New(lexresolve.Options{
			TXT: lexresolve.NewTXTResolver(c.LexiconDNSServer), Directory: c.Directory, HTTP: c.HTTPClient,
			UserAgent: "lexview/" + Version, Now: c.Now,
		})
	}
	return c
}

// guardedHTTPClient is the default HTTPClient: timeouts, and private,
// loopback and other non-public addresses refused unless
// AllowPrivateNetworks, except at the origins of PLCURL, RelayURL and
// JetstreamURL (their defaults when unset).
func (c Config) guardedHTTPClient() *http.Client {
	or := func(v, def string) string {
		if v == "" {
			return def
		}
		return v
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: netguard.NewTransport(netguard.Options{
		AllowPrivate: c.AllowPrivateNetworks,
		// The operator chose these; they may live on a private network.
		// Only their origins: other ports of their hosts stay guarded.
		AllowOrigins: []string{or(c.PLCURL, DefaultPLCURL), or(c.RelayURL, DefaultRelayURL), or(c.JetstreamURL, DefaultJetstreamURL)},
	})}
}

// validate refuses settings that must not run; unset fields are valid
// (their defaults are).
func (c Config) validate() error {
	if c.SessionSecret == SessionSecretPlaceholder {
		return errors.New("SESSION_SECRET is the documented placeholder; set a random value of at least 32 bytes")
	}
	if c.SessionSecret != "" && len(c.SessionSecret) < minSessionSecretLen {
		return fmt.Errorf("SESSION_SECRET must be at least %d bytes, got %d", minSessionSecretLen, len(c.SessionSecret))
	}
	if c.DefaultRateLimitCapacity < 0 || c.DefaultRateLimitRefillRate < 0 {
		return errors.New("rate-limit defaults must not be negative")
	}
	switch c.AdminClaim {
	case "", ClaimWithToken, ClaimFirstRequest, ClaimByCommand:
	default:
		return fmt.Errorf("admin claim mode %q is not one of %q, %q, %q", c.AdminClaim, ClaimWithToken, ClaimFirstRequest, ClaimByCommand)
	}
	if c.Port > 65535 || c.Port < -1 {
		return fmt.Errorf("port %d out of range", c.Port)
	}
	return nil
}
