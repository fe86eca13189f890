package apiclients

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/lexview/lexview/appview/internal/core/caller"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/storage"
)

// Credentials are what a request presents to name its API client: the
// client key, and the secret (confidential clients) or the Origin (public
// clients in a browser).
type Credentials struct {
	Key, Secret, Origin string
}

// Refusals of client authentication, as the specification words them.
var (
	// ErrMissingClient refuses an XRPC call without a client key.
	ErrMissingClient  = fail.New(fail.Unauthenticated, "Missing client identification")
	ErrNeedsClientKey = fail.New(fail.Unauthenticated, "requires an API client key")
	ErrBadClient      = fail.New(fail.Unauthenticated, "Invalid client")
	ErrNeedsDPoP      = fail.New(fail.Unauthenticated, caller.MsgNeedsDPoP)
	errBadOrigin      = fail.New(fail.Unauthenticated, "Origin is not allowed for this client")
)

// msgRateLimited answers a call whose client's bucket is empty.
const msgRateLimited = "rate limit exceeded"

// RateLimited refuses a call whose client's bucket is empty (RateLimited,
// with the wait before a retry): every rate-limited endpoint answers it.
func RateLimited(wait time.Duration) error { return fail.RateLimit(msgRateLimited, wait) }

// TakeToken identifies key (Unauthenticated when it is missing, unknown
// or inactive) and takes a token from its client's bucket (RateLimited,
// with the wait, when it is empty).
func (m *Manager) TakeToken(ctx context.Context, key string) (*Client, error) {
	if key == "" {
		return nil, ErrNeedsClientKey
	}
	id, err := m.reg.Identify(ctx, Credentials{Key: key})
	if errors.Is(err, ErrInvalidClient) {
		return nil, ErrBadClient
	}
	if err != nil {
		return nil, err
	}
	if ok, wait := m.reg.Allow(id); !ok {
		return nil, RateLimited(wait)
	}
	return id, nil
}

// active reads a client fresh (the registry caches identities).
func (m *Manager) active(ctx context.Context, id string) (storage.APIClient, error) {
	c, err := m.store.GetAPIClient(ctx, id)
	if errors.Is(err, storage.ErrNotFound) || err == nil && !c.IsActive {
		return storage.APIClient{}, ErrBadClient
	}
	return c, err
}

// AuthenticateSecret authenticates a confidential client by key and
// secret: a known client's request takes a token from its bucket first,
// then the secret's SHA-256 is compared with the stored one in constant
// time. A public client is refused with `requires DPoP authentication`
// (it authenticates with a DPoP-bound session instead).
func (m *Manager) AuthenticateSecret(ctx context.Context, cred Credentials) (storage.APIClient, error) {
	id, err := m.TakeToken(ctx, cred.Key)
	if err != nil {
		return storage.APIClient{}, err
	}
	c, err := m.active(ctx, id.ID)
	if err != nil {
		return c, err
	}
	if c.Type == storage.ClientPublic {
		return storage.APIClient{}, ErrNeedsDPoP
	}
	if !SecretMatches(cred.Secret, c.SecretHash) {
		return storage.APIClient{}, ErrBadClient
	}
	return c, nil
}

// AuthenticateApp authenticates the client of an app's own call (DPoP key
// provisioning, session registration): a confidential client by key and
// secret, a public client by key and an Origin among its allowed origins.
func (m *Manager) AuthenticateApp(ctx context.Context, cred Credentials) (storage.APIClient, error) {
	if cred.Key == "" {
		return storage.APIClient{}, ErrNeedsClientKey
	}
	c, err := m.store.GetAPIClientByKey(ctx, cred.Key)
	if errors.Is(err, storage.ErrNotFound) || err == nil && !c.IsActive {
		return storage.APIClient{}, ErrBadClient
	}
	if err != nil {
		return c, err
	}
	if c.Type != storage.ClientPublic {
		return m.AuthenticateSecret(ctx, cred)
	}
	if _, err := m.TakeToken(ctx, cred.Key); err != nil {
		if fail.KindOf(err) == fail.RateLimited {
			return storage.APIClient{}, err
		}
		return storage.APIClient{}, ErrBadClient
	}
	allowed := func(o string) bool { return strings.EqualFold(strings.TrimRight(o, "/"), cred.Origin) }
	if cred.Origin == "" || !slices.ContainsFunc(c.AllowedOrigins, allowed) {
		return storage.APIClient{}, errBadOrigin
	}
	return c, nil
}

// SecretMatches compares the SHA-256 of a presented secret with the stored
// hex hash in constant time. An empty secret never matches.
func SecretMatches(secret, storedHash string) bool {
	want, err := hex.DecodeString(storedHash)
	if secret == "" || err != nil || len(want) != sha256.Size {
		return false
	}
	sum := sha256.Sum256([]byte(secret))
	return subtle.ConstantTimeCompare(sum[:], want) == 1
}

// AuthenticateKey authenticates a client that also proves a DPoP-bound
// session (the front end checks the session): its key takes a token from
// the bucket, and a confidential client must still send its secret, which
// a session does not stand in for.
func (m *Manager) AuthenticateKey(ctx context.Context, cred Credentials) (storage.APIClient, error) {
	if _, err := m.TakeToken(ctx, cred.Key); err != nil {
		return storage.APIClient{}, err
	}
	c, err := m.store.GetAPIClientByKey(ctx, cred.Key)
	if errors.Is(err, storage.ErrNotFound) || err == nil && !c.IsActive {
		return storage.APIClient{}, ErrBadClient
	}
	if err != nil {
		return c, err
	}
	if c.Type != storage.ClientPublic && !SecretMatches(cred.Secret, c.SecretHash) {
		return storage.APIClient{}, ErrBadClient
	}
	return c, nil
}
