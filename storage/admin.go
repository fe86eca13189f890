package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"
)

// ErrConflict is returned when a write would violate a uniqueness rule.
var ErrConflict = errors.New("conflict")

// NewID returns a random UUID (version 4) string.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// AdminUser is a DID allowed to use the admin API.
type AdminUser struct {
	ID          string
	DID         string
	IsSuper     bool
	Permissions []string
	CreatedAt   time.Time
	LastUsedAt  time.Time // zero when never used
}

// AdminAPIKey is an admin API key. Only the SHA-256 of the secret is kept.
type AdminAPIKey struct {
	ID          string
	UserID      string // the creating admin user
	Name        string
	Prefix      string // the first characters of the secret, for recognition
	Hash        string // hex SHA-256 of the secret
	Permissions []string
	CreatedAt   time.Time
	LastUsedAt  time.Time
}

// AdminStore keeps admin users and their API keys.
type AdminStore interface {
	// BootstrapSuperUser stores u as the super user if, and only if, no
	// admin user exists. It reports whether u was stored; concurrent calls
	// store at most one super user.
	BootstrapSuperUser(ctx context.Context, u AdminUser) (bool, error)
	// CreateAdminUser stores a user; ErrConflict when the DID exists.
	CreateAdminUser(ctx context.Context, u AdminUser) error
	GetAdminUser(ctx context.Context, id string) (AdminUser, error)
	GetAdminUserByDID(ctx context.Context, did string) (AdminUser, error)
	// ListAdminUsers returns users oldest first.
	ListAdminUsers(ctx context.Context) ([]AdminUser, error)
	CountAdminUsers(ctx context.Context) (int, error)
	SetAdminUserPermissions(ctx context.Context, id string, perms []string) error
	// DeleteAdminUser removes a user and its API keys.
	DeleteAdminUser(ctx context.Context, id string) error
	// TransferSuper makes toID the super user with perms, and fromID an
	// ordinary user, in one transaction.
	TransferSuper(ctx context.Context, fromID, toID string, perms []string) error
	TouchAdminUser(ctx context.Context, id string, at time.Time) error

	CreateAdminAPIKey(ctx context.Context, k AdminAPIKey) error
	GetAdminAPIKeyByHash(ctx context.Context, hash string) (AdminAPIKey, error)
	// ListAdminAPIKeys returns keys newest first.
	ListAdminAPIKeys(ctx context.Context) ([]AdminAPIKey, error)
	DeleteAdminAPIKey(ctx context.Context, id string) error
	TouchAdminAPIKey(ctx context.Context, id string, at time.Time) error
}

// Client types.
const (
	ClientConfidential = "confidential"
	ClientPublic       = "public"
)

// APIClient is an application allowed to call the XRPC API.
type APIClient struct {
	ID                  string
	Key                 string // hvc_...
	SecretHash          string // hex SHA-256 of the hvs_... secret
	Name                string
	ClientIDURL         string
	ClientURI           string
	RedirectURIs        []string
	Scopes              string
	Type                string // ClientConfidential or ClientPublic
	AllowedOrigins      []string
	RateLimitCapacity   *int     // nil: the instance default
	RateLimitRefillRate *float64 // nil: the instance default
	IsActive            bool
	CreatedBy           string // DID
	ParentID            string // "" for top-level clients
	OwnerDID            string // set for third-party clients
	CreatedAt           time.Time
	UpdatedAt           time.Time
}

// APIClientStore keeps API clients.
type APIClientStore interface {
	// CreateAPIClient stores c; ErrConflict when its client_id_url or key
	// is taken.
	CreateAPIClient(ctx context.Context, c APIClient) error
	GetAPIClient(ctx context.Context, id string) (APIClient, error)
	GetAPIClientByKey(ctx context.Context, key string) (APIClient, error)
	// ListAPIClients returns clients newest first; parentID filters to the
	// children of one client when non-empty.
	ListAPIClients(ctx context.Context, parentID string) ([]APIClient, error)
	// UpdateAPIClient saves the mutable fields of c. Deactivating a client
	// deactivates its children. It returns the keys of every client whose
	// row changed.
	UpdateAPIClient(ctx context.Context, c APIClient) (changedKeys []string, err error)
	// DeleteAPIClient removes a client and its children, returning their keys.
	DeleteAPIClient(ctx context.Context, id string) (deletedKeys []string, err error)
}

// Event is one event-log (audit) entry.
type Event struct {
	ID        string
	Type      string // dotted, e.g. lexicon.created
	Severity  string // info, warn, error
	ActorDID  string
	Subject   string
	Detail    json.RawMessage
	CreatedAt time.Time
}

// EventFilter selects event-log entries, newest first.
type EventFilter struct {
	Type     string // exact event_type
	Category string // event_type prefix before a dot, e.g. "lexicon"
	Severity string
	Subject  string
	Limit    int
	// Before continues a listing after the entry with this ID.
	Before string
}

// EventStore keeps the event log.
type EventStore interface {
	AppendEvents(ctx context.Context, events []Event) error
	// ListEvents returns a page and whether more entries follow.
	ListEvents(ctx context.Context, f EventFilter) ([]Event, bool, error)
	// PurgeEvents deletes entries created before t.
	PurgeEvents(ctx context.Context, before time.Time) (int64, error)
}

// Blob is a small binary setting such as the instance logo.
type Blob struct {
	ContentType string
	Data        []byte
	UpdatedAt   time.Time
}

// SettingsStore keeps instance settings.
type SettingsStore interface {
	ListSettings(ctx context.Context) (map[string]string, error)
	// GetSetting returns ErrNotFound when the key is unset.
	GetSetting(ctx context.Context, key string) (string, error)
	PutSetting(ctx context.Context, key, value string) error
	// DeleteSetting returns ErrNotFound when the key is unset.
	DeleteSetting(ctx context.Context, key string) error
	PutBlob(ctx context.Context, key string, b Blob) error
	GetBlob(ctx context.Context, key string) (Blob, error)
	DeleteBlob(ctx context.Context, key string) error
}

// CollectionCount is the number of records in one collection.
type CollectionCount struct {
	Collection string
	Count      int64
}

// DBInfo describes the database for operators.
type DBInfo struct {
	Dialect   string
	Version   string
	Location  string // file path (SQLite) or database name (PostgreSQL)
	SizeBytes int64
	// WALSizeBytes is the write-ahead log size (SQLite).
	WALSizeBytes int64
	// FreeDiskBytes is the free space beside the database file (SQLite),
	// or -1 when unknown.
	FreeDiskBytes int64
}

// OperatorStore is what the admin API needs beyond the other stores.
type OperatorStore interface {
	// CollectionCounts counts records per collection, largest first.
	CollectionCounts(ctx context.Context) ([]CollectionCount, error)
	// DeleteCollection removes every record of a collection.
	DeleteCollection(ctx context.Context, collection string) (int64, error)
	// DBInfo describes the database.
	DBInfo(ctx context.Context) (DBInfo, error)
}
