package apiclients

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
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
	GetAPIClientByKey(ctx context.Context, key string) (storage.APIClient, error)
	ListAPIClients(ctx context.Context, parentID string) ([]storage.APIClient, error)
	UpdateAPIClient(ctx context.Context, c storage.APIClient) ([]string, error)
	DeleteAPIClient(ctx context.Context, id string) ([]string, error)
}

// Manager is the API client service: it creates, changes and deletes API
// clients (the admin API's and third-party children alike), keeps the
// Registry's cache and buckets in step, and audits every change.
type Manager struct {
	store  ManagerStore
	reg    *Registry
	events *eventlog.Log // nil records nothing
	now    func() time.Time
}

// ManagerOptions configures NewManager.
type ManagerOptions struct {
	// Store holds the API clients.
	Store ManagerStore
	// Registry is told of every change, so that it applies to the next call.
	Registry *Registry
	// Events records the audit entries; nil records nothing.
	Events *eventlog.Log
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// NewManager returns a Manager.
func NewManager(opts ManagerOptions) *Manager {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Manager{store: opts.Store, reg: opts.Registry, events: opts.Events, now: opts.Now}
}

// Errors of the service, with the specification's messages.
var (
	ErrNotFound          = fail.New(fail.NotFound, "API client not found")
	ErrConflict          = fail.New(fail.Conflict, "client_id_url already registered")
	ErrInvalidClientType = fail.New(fail.Invalid, "Invalid client_type")
	errTypeImmutable     = fail.New(fail.Invalid, "client_type cannot be changed")
)

func invalid(format string, args ...any) error { return fail.Invalidf(format, args...) }

func (m *Manager) audit(ctx context.Context, eventType, actor, subject string, detail map[string]any) {
	if m.events != nil {
		m.events.Record(ctx, eventlog.Entry{Type: eventType, ActorDID: actor, Subject: subject, Detail: detail})
	}
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
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

// Create stores a new active client on behalf of nc.CreatedBy
// (api_client.created) and returns it with its secret, which is not kept
// and cannot be recovered.
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
	if err := m.checkChildScopes(ctx, nc.ParentID, nc.Scopes); err != nil {
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
	err := m.store.CreateAPIClient(ctx, c)
	if errors.Is(err, storage.ErrConflict) {
		return storage.APIClient{}, "", ErrConflict
	}
	if err != nil {
		return storage.APIClient{}, "", err
	}
	m.reg.Forget(key) // drop any negative cache entry
	m.audit(ctx, "api_client.created", nc.CreatedBy, c.ID, map[string]any{
		"name": c.Name, "client_id_url": c.ClientIDURL, "client_uri": c.ClientURI, "client_type": c.Type,
		"scopes": c.Scopes, "rate_limit_capacity": c.RateLimitCapacity, "rate_limit_refill_rate": c.RateLimitRefillRate,
		"parent_client_id": optional(c.ParentID), "owner_did": optional(c.OwnerDID),
	})
	return c, secret, nil
}

// Get returns one client.
func (m *Manager) Get(ctx context.Context, id string) (storage.APIClient, error) {
	c, err := m.store.GetAPIClient(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return c, ErrNotFound
	}
	return c, err
}

// List returns clients newest first, optionally the children of parentID.
func (m *Manager) List(ctx context.Context, parentID string) ([]storage.APIClient, error) {
	return m.store.ListAPIClients(ctx, parentID)
}

// Field is an optional, nullable field of a Patch: Set when the request
// names it; Value nil means null (cleared).
type Field[T any] struct {
	Set   bool
	Value *T
}

// Patch changes some of a client's mutable fields; nil fields stay.
// ClientType, when set, must be the client's current type (the type
// cannot change).
type Patch struct {
	Name, ClientURI, Scopes      *string
	RedirectURIs, AllowedOrigins *[]string
	IsActive                     *bool
	RateLimitCapacity            Field[int]
	RateLimitRefillRate          Field[float64]
	ClientType                   *string
}

// FullPatch is a patch that sets every mutable field to c's values: Update
// with it saves an edited copy of a client.
func FullPatch(c storage.APIClient) Patch {
	return Patch{
		Name: &c.Name, ClientURI: &c.ClientURI, Scopes: &c.Scopes, RedirectURIs: &c.RedirectURIs,
		AllowedOrigins: &c.AllowedOrigins, IsActive: &c.IsActive,
		RateLimitCapacity:   Field[int]{Set: true, Value: c.RateLimitCapacity},
		RateLimitRefillRate: Field[float64]{Set: true, Value: c.RateLimitRefillRate},
	}
}

// apply changes c and returns the names of the fields the patch sets.
func (p Patch) apply(c *storage.APIClient) []string {
	changed := []string{}
	set := func(name string, ok bool, do func()) {
		if ok {
			do()
			changed = append(changed, name)
		}
	}
	set("name", p.Name != nil, func() { c.Name = *p.Name })
	set("client_uri", p.ClientURI != nil, func() { c.ClientURI = *p.ClientURI })
	set("redirect_uris", p.RedirectURIs != nil, func() { c.RedirectURIs = *p.RedirectURIs })
	set("scopes", p.Scopes != nil, func() { c.Scopes = *p.Scopes })
	set("rate_limit_capacity", p.RateLimitCapacity.Set, func() { c.RateLimitCapacity = p.RateLimitCapacity.Value })
	set("rate_limit_refill_rate", p.RateLimitRefillRate.Set, func() { c.RateLimitRefillRate = p.RateLimitRefillRate.Value })
	set("is_active", p.IsActive != nil, func() { c.IsActive = *p.IsActive })
	set("allowed_origins", p.AllowedOrigins != nil, func() { c.AllowedOrigins = *p.AllowedOrigins })
	if c.RedirectURIs == nil {
		c.RedirectURIs = []string{}
	}
	if c.AllowedOrigins == nil {
		c.AllowedOrigins = []string{}
	}
	return changed
}

// Update applies a patch to client id on behalf of actor
// (api_client.updated), validates and saves it; changes to limits and
// activation apply to the next request, and deactivation cascades to
// children.
func (m *Manager) Update(ctx context.Context, actor, id string, p Patch) (storage.APIClient, error) {
	c, err := m.Get(ctx, id)
	if err != nil {
		return c, err
	}
	if p.ClientType != nil && *p.ClientType != c.Type {
		return c, errTypeImmutable
	}
	changed := p.apply(&c)
	if err := validate(c.Name, c.ClientIDURL, c.ClientURI, c.RedirectURIs, c.Scopes, c.Type, c.AllowedOrigins,
		c.RateLimitCapacity, c.RateLimitRefillRate); err != nil {
		return c, err
	}
	if p.Scopes != nil {
		if err := m.checkChildScopes(ctx, c.ParentID, c.Scopes); err != nil {
			return c, err
		}
	}
	keys, err := m.store.UpdateAPIClient(ctx, c)
	if errors.Is(err, storage.ErrNotFound) { // deleted meanwhile
		return c, ErrNotFound
	}
	if err != nil {
		return c, err
	}
	m.reg.Invalidate(keys...)
	detail := map[string]any{"fields": changed}
	if p.IsActive != nil {
		detail["is_active"] = c.IsActive
	}
	m.audit(ctx, "api_client.updated", actor, c.ID, detail)
	return c, nil
}

// Delete removes a client and its children on behalf of actor
// (api_client.deleted), frees their buckets, and returns what it removed.
func (m *Manager) Delete(ctx context.Context, actor, id string) (storage.APIClient, error) {
	c, err := m.Get(ctx, id)
	if err != nil {
		return c, err
	}
	keys, err := m.store.DeleteAPIClient(ctx, c.ID)
	if errors.Is(err, storage.ErrNotFound) { // deleted meanwhile
		return c, ErrNotFound
	}
	if err != nil {
		return c, err
	}
	m.reg.Forget(keys...)
	m.audit(ctx, "api_client.deleted", actor, c.ID, map[string]any{
		"name": c.Name, "client_id_url": c.ClientIDURL, "parent_client_id": optional(c.ParentID), "owner_did": optional(c.OwnerDID),
	})
	return c, nil
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

// checkChildScopes refuses scopes for a child of client parentID (none
// when "") that its parent does not have: a child never gets more than
// the client it was created through.
func (m *Manager) checkChildScopes(ctx context.Context, parentID, scopes string) error {
	if parentID == "" {
		return nil
	}
	parent, err := m.Get(ctx, parentID)
	if err != nil {
		return err
	}
	granted := strings.Fields(parent.Scopes)
	for _, sc := range strings.Fields(scopes) {
		if !slices.Contains(granted, sc) {
			return fail.New(fail.Invalid, "scope "+sc+" is not granted to the parent client")
		}
	}
	return nil
}
