package clients

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/lexview/lexview/storage"
)

// Key and secret prefixes.
const (
	KeyPrefix    = "hvc_"
	SecretPrefix = "hvs_"
)

// ManagerStore is the persistence the Manager needs.
type ManagerStore interface {
	CreateAPIClient(ctx context.Context, c storage.APIClient) error
	GetAPIClient(ctx context.Context, id string) (storage.APIClient, error)
	ListAPIClients(ctx context.Context, parentID string) ([]storage.APIClient, error)
	UpdateAPIClient(ctx context.Context, c storage.APIClient) ([]string, error)
	DeleteAPIClient(ctx context.Context, id string) ([]string, error)
}

// Manager creates, changes and deletes API clients, keeping the Registry's
// cache and buckets in step.
type Manager struct {
	store ManagerStore
	reg   *Registry
	now   func() time.Time
}

// NewManager returns a Manager.
func NewManager(store ManagerStore, reg *Registry, now func() time.Time) *Manager {
	return &Manager{store: store, reg: reg, now: now}
}

// ValidationError is a client-side mistake in a request.
type ValidationError struct{ Msg string }

func (e *ValidationError) Error() string { return e.Msg }

func invalid(format string, args ...any) error {
	return &ValidationError{Msg: fmt.Sprintf(format, args...)}
}

// NewClient describes a client to create.
type NewClient struct {
	Name                string
	ClientIDURL         string
	ClientURI           string
	RedirectURIs        []string
	Scopes              string // default "atproto"
	Type                string // default confidential
	AllowedOrigins      []string
	RateLimitCapacity   *int
	RateLimitRefillRate *float64
	CreatedBy           string
	ParentID            string
	OwnerDID            string
}

// ErrInvalidClientType is the validation failure for an unknown type.
var ErrInvalidClientType = &ValidationError{Msg: "Invalid client_type"}

// Create stores a new active client and returns it with its secret, which
// is not kept and cannot be recovered.
func (m *Manager) Create(ctx context.Context, nc NewClient) (storage.APIClient, string, error) {
	if nc.Type == "" {
		nc.Type = storage.ClientConfidential
	}
	if nc.Type != storage.ClientConfidential && nc.Type != storage.ClientPublic {
		return storage.APIClient{}, "", ErrInvalidClientType
	}
	if nc.Scopes == "" {
		nc.Scopes = "atproto"
	}
	if err := validate(nc.Name, nc.ClientIDURL, nc.ClientURI, nc.RedirectURIs, nc.Scopes, nc.Type, nc.AllowedOrigins,
		nc.RateLimitCapacity, nc.RateLimitRefillRate); err != nil {
		return storage.APIClient{}, "", err
	}
	key, secret := KeyPrefix+randomToken(24), SecretPrefix+randomToken(32)
	now := m.now()
	c := storage.APIClient{
		ID: storage.NewID(), Key: key, SecretHash: HashSecret(secret), Name: nc.Name, ClientIDURL: nc.ClientIDURL,
		ClientURI: nc.ClientURI, RedirectURIs: nc.RedirectURIs, Scopes: nc.Scopes, Type: nc.Type,
		AllowedOrigins: nc.AllowedOrigins, RateLimitCapacity: nc.RateLimitCapacity, RateLimitRefillRate: nc.RateLimitRefillRate,
		IsActive: true, CreatedBy: nc.CreatedBy, ParentID: nc.ParentID, OwnerDID: nc.OwnerDID, CreatedAt: now, UpdatedAt: now,
	}
	if c.RedirectURIs == nil {
		c.RedirectURIs = []string{}
	}
	if c.AllowedOrigins == nil {
		c.AllowedOrigins = []string{}
	}
	if err := m.store.CreateAPIClient(ctx, c); err != nil {
		return storage.APIClient{}, "", err
	}
	m.reg.Forget(key) // drop any negative cache entry
	return c, secret, nil
}

// Get returns one client.
func (m *Manager) Get(ctx context.Context, id string) (storage.APIClient, error) {
	return m.store.GetAPIClient(ctx, id)
}

// List returns clients newest first, optionally the children of parentID.
func (m *Manager) List(ctx context.Context, parentID string) ([]storage.APIClient, error) {
	return m.store.ListAPIClients(ctx, parentID)
}

// Update validates and saves c's mutable fields; changes to limits and
// activation apply to the next request. Deactivation cascades to children.
func (m *Manager) Update(ctx context.Context, c storage.APIClient) error {
	if err := validate(c.Name, c.ClientIDURL, c.ClientURI, c.RedirectURIs, c.Scopes, c.Type, c.AllowedOrigins,
		c.RateLimitCapacity, c.RateLimitRefillRate); err != nil {
		return err
	}
	keys, err := m.store.UpdateAPIClient(ctx, c)
	if err != nil {
		return err
	}
	m.reg.Invalidate(keys...)
	return nil
}

// Delete removes a client and its children and frees their buckets.
func (m *Manager) Delete(ctx context.Context, id string) error {
	keys, err := m.store.DeleteAPIClient(ctx, id)
	if err != nil {
		return err
	}
	m.reg.Forget(keys...)
	return nil
}

// HashSecret returns the stored form (hex SHA-256) of a client secret.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func validate(name, clientIDURL, clientURI string, redirects []string, scopes, typ string, origins []string,
	capacity *int, refill *float64) error {
	if strings.TrimSpace(name) == "" {
		return invalid("name is required")
	}
	if len(name) > 200 {
		return invalid("name is too long")
	}
	if !isHTTPURL(clientIDURL) {
		return invalid("client_id_url must be an http(s) URL")
	}
	if !isHTTPURL(clientURI) {
		return invalid("client_uri must be an http(s) URL")
	}
	if len(redirects) == 0 {
		return invalid("redirect_uris must list at least one URI")
	}
	for _, u := range redirects {
		if p, err := url.Parse(u); err != nil || p.Scheme == "" {
			return invalid("invalid redirect URI %q", u)
		}
	}
	if !strings.Contains(" "+scopes+" ", " atproto ") {
		return invalid("scopes must include atproto")
	}
	if len(origins) > 0 && typ != storage.ClientPublic {
		return invalid("allowed_origins is only for public clients")
	}
	for _, o := range origins {
		if p, err := url.Parse(o); err != nil || p.Host == "" || (p.Path != "" && p.Path != "/") {
			return invalid("invalid origin %q", o)
		}
	}
	if capacity != nil && *capacity < 1 {
		return invalid("rate_limit_capacity must be at least 1")
	}
	if capacity != nil && *capacity > math.MaxInt32 {
		return invalid("rate_limit_capacity must be at most %d", math.MaxInt32)
	}
	if refill != nil && *refill <= 0 {
		return invalid("rate_limit_refill_rate must be positive")
	}
	return nil
}

func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}

// IsValidation reports whether err is a ValidationError.
func IsValidation(err error) bool {
	var v *ValidationError
	return errors.As(err, &v)
}
