package appview

import (
	"context"
	"net/http"

	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/web/clientauth"
	"github.com/lexview/lexview/storage"
)

// ClientManager creates, reads, edits and deletes the instance's API
// clients (App.Clients). It is the code behind /admin/api-clients: each
// change is validated and audited in the event log, with the actor DID
// given (or none), and applies to the next XRPC request. Failures the
// caller can act on are *Error values (ErrInvalid, ErrNotFound,
// ErrConflict).
type ClientManager struct{ m *apiclients.Manager }

// Clients returns the App's API client manager.
func (a *App) Clients() *ClientManager { return &ClientManager{a.clientManager} }

// NewClient describes an API client to create (ClientManager.Create).
// Name, ClientIDURL, ClientURI and RedirectURIs are required.
type NewClient struct {
	Name         string
	ClientIDURL  string   // the client's OAuth client_id: the URL of its metadata document; unique
	ClientURI    string   // the client's home page
	RedirectURIs []string // its OAuth redirect URIs
	Scopes       string   // default "atproto"
	Type         string   // storage.ClientConfidential (the default) or storage.ClientPublic
	// AllowedOrigins are browser origins a public client may call from,
	// besides ClientURI's.
	AllowedOrigins []string
	// RateLimitCapacity and RateLimitRefillRate are its token bucket; nil
	// takes the instance's defaults (Config.Clients.DefaultRateLimitCapacity,
	// Config.Clients.DefaultRateLimitRefillRate).
	RateLimitCapacity   *int
	RateLimitRefillRate *float64
	CreatedBy           string // the actor's DID, in the audit entry
	// ParentID makes it a third-party client of another; its scopes must
	// be within the parent's.
	ParentID string
	OwnerDID string // the user owning a third-party client
}

// Create stores a new active client and returns it with its secret
// (hvs_...), which is not kept and cannot be recovered. Its Key (hvc_...)
// is what XRPC callers send in X-Client-Key.
func (m *ClientManager) Create(ctx context.Context, nc NewClient) (storage.APIClient, string, error) {
	c, secret, err := m.m.Create(ctx, apiclients.NewClient(nc))
	return c, secret, publicError(err)
}

// Get returns the client with the given id.
func (m *ClientManager) Get(ctx context.Context, id string) (storage.APIClient, error) {
	c, err := m.m.Get(ctx, id)
	return c, publicError(err)
}

// List returns the clients, newest first: every one, or the children of
// parentID when it is not "".
func (m *ClientManager) List(ctx context.Context, parentID string) ([]storage.APIClient, error) {
	cs, err := m.m.List(ctx, parentID)
	return cs, publicError(err)
}

// Update applies p to client id on behalf of actor and returns the client
// saved. Deactivating a client deactivates its children too.
func (m *ClientManager) Update(ctx context.Context, actor, id string, p ClientPatch) (storage.APIClient, error) {
	c, err := m.m.Update(ctx, actor, id, p.internal())
	return c, publicError(err)
}

// Delete removes client id and its children on behalf of actor, and
// returns what it removed.
func (m *ClientManager) Delete(ctx context.Context, actor, id string) (storage.APIClient, error) {
	c, err := m.m.Delete(ctx, actor, id)
	return c, publicError(err)
}

// ClientPatch changes some of an API client's fields
// (ClientManager.Update): nil fields stay as they are. FullClientPatch
// makes one from an edited copy of a client.
type ClientPatch struct {
	Name, ClientURI, Scopes      *string
	RedirectURIs, AllowedOrigins *[]string
	IsActive                     *bool
	RateLimitCapacity            ClientPatchField[int]
	RateLimitRefillRate          ClientPatchField[float64]
	// ClientType, when set, must be the client's current type: a client's
	// type cannot change.
	ClientType *string
}

// ClientPatchField is a nullable field of a ClientPatch: Set changes it,
// to Value, or to null (the instance default) when Value is nil.
type ClientPatchField[T any] struct {
	Set   bool
	Value *T
}

// FullClientPatch is a patch that sets every mutable field to c's values:
// Update with it saves an edited copy of a client.
func FullClientPatch(c storage.APIClient) ClientPatch {
	return ClientPatch{
		Name: &c.Name, ClientURI: &c.ClientURI, Scopes: &c.Scopes, RedirectURIs: &c.RedirectURIs,
		AllowedOrigins: &c.AllowedOrigins, IsActive: &c.IsActive,
		RateLimitCapacity:   ClientPatchField[int]{Set: true, Value: c.RateLimitCapacity},
		RateLimitRefillRate: ClientPatchField[float64]{Set: true, Value: c.RateLimitRefillRate},
	}
}

func (p ClientPatch) internal() apiclients.Patch {
	return apiclients.Patch{
		Name: p.Name, ClientURI: p.ClientURI, Scopes: p.Scopes, RedirectURIs: p.RedirectURIs,
		AllowedOrigins: p.AllowedOrigins, IsActive: p.IsActive, ClientType: p.ClientType,
		RateLimitCapacity:   apiclients.Field[int](p.RateLimitCapacity),
		RateLimitRefillRate: apiclients.Field[float64](p.RateLimitRefillRate),
	}
}

// Client is the API client of an XRPC request, as a ClientIdentifier
// identifies it.
type Client struct {
	ID   string
	Key  string // the client key the request presented
	Name string
	// ParentID is set for third-party (child) clients.
	ParentID string
}

// ClientIdentifier identifies the API client of each XRPC request from
// the client key it presents (X-Client-Key, or the client_key query
// parameter), in place of the instance's stored API clients
// (Config.Clients.Identifier). A client it returns is not rate limited.
type ClientIdentifier interface {
	// Identify returns the client holding key. It returns
	// ErrInvalidClient (possibly wrapped) when the key is unknown or the
	// client inactive (so is a nil client), and the request is refused
	// with 401; any other error answers 500.
	Identify(ctx context.Context, key string, r *http.Request) (*Client, error)
}

// ClientIdentifierFunc adapts a function to ClientIdentifier.
type ClientIdentifierFunc func(ctx context.Context, key string, r *http.Request) (*Client, error)

// Identify calls f.
func (f ClientIdentifierFunc) Identify(ctx context.Context, key string, r *http.Request) (*Client, error) {
	return f(ctx, key, r)
}

// ErrInvalidClient is returned by a ClientIdentifier for an unknown or
// inactive client key.
var ErrInvalidClient = apiclients.ErrInvalidClient

// clientIdentifier is the identifier the XRPC front end asks:
// Config.Clients.Identifier, else the instance's API clients (with their
// rate limits).
func (a *App) clientIdentifier() clientauth.Identifier {
	if a.cfg.Clients.Identifier == nil {
		return clientauth.Stored(a.clients)
	}
	return identifierLink{a.cfg.Clients.Identifier}
}

// identifierLink lets the front end ask an embedder's ClientIdentifier.
type identifierLink struct{ id ClientIdentifier }

func (l identifierLink) Identify(ctx context.Context, key string, r *http.Request) (*apiclients.Client, error) {
	c, err := l.id.Identify(ctx, key, r)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, ErrInvalidClient
	}
	return &apiclients.Client{ID: c.ID, Key: c.Key, Name: c.Name, ParentID: c.ParentID}, nil
}
