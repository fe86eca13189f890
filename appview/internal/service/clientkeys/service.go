// Package clientkeys is the service for client authentication keys: the
// ES256 keys with which Lexview signs client assertions for an API client,
// so that it can act as the app's confidential OAuth client toward its
// users' authorization servers.
//
// A client has at most one current key. Rotating makes the current key
// retiring (still published, still signing refreshes of the sessions it
// established) and a new key current; revoking a retiring key removes it
// from the key set at once and destroys its sessions; the current key
// cannot be revoked (rotate first). Retiring keys without sessions are
// removed by Sweep. Private keys are sealed at rest and never returned.
//
// The key set is published at JWKSURI: PUBLIC_URL +
// /oauth/clients/<id>/jwks.json, where <id> is the API client's id (the
// UUID of the admin API, not its client key or client_id_url).
package clientkeys

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
)

// Store is the persistence the service needs.
type Store interface {
	storage.OAuthStore
	GetAPIClient(ctx context.Context, id string) (storage.APIClient, error)
}

// Options are what the service works with.
type Options struct {
	Store Store
	// Sealer seals private keys; nil means token encryption is off and
	// no key can be made.
	Sealer *oauth.Sealer
	// PublicURL is the instance's public base URL, from which key set
	// URLs are built.
	PublicURL string
	// HTTPClient fetches client metadata documents (Recheck); required,
	// and meant to be the guarded client.
	HTTPClient *http.Client
	Events     *eventlog.Log
	Now        func() time.Time
}

// Service manages client authentication keys.
type Service struct{ opt Options }

// New returns the service.
func New(opt Options) *Service { return &Service{opt: opt} }

// Errors of the service, with the messages the admin API answers.
var (
	errClientNotFound = fail.New(fail.NotFound, "API client not found")
	errKeyNotFound    = fail.New(fail.NotFound, "authentication key not found")
	errNoKey          = fail.New(fail.Invalid, "the client has no authentication key")
	errNoKeyHeld      = fail.New(fail.Invalid, "the client holds no authentication key")
	errRevokeCurrent  = fail.New(fail.Invalid, "cannot revoke the current key; rotate first")
	errNoSealer       = fail.New(fail.Unavailable, "token encryption is not configured")
)

// JWKSURI is the published key set URL of the client id.
func (s *Service) JWKSURI(clientID string) string { return JWKSURI(s.opt.PublicURL, clientID) }

func (s *Service) client(ctx context.Context, id string) (storage.APIClient, error) {
	c, err := s.opt.Store.GetAPIClient(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return c, errClientNotFound
	}
	return c, err
}

func (s *Service) audit(ctx context.Context, actor, eventType, clientID string, detail map[string]any) {
	s.opt.Events.Record(ctx, eventlog.Entry{Type: eventType, ActorDID: actor, Subject: clientID, Detail: detail})
}

func (s *Service) newKey(clientID string) (storage.ClientAuthKey, error) {
	if s.opt.Sealer == nil {
		return storage.ClientAuthKey{}, errNoSealer
	}
	return NewKey(s.opt.Sealer, clientID, s.opt.Now())
}

// Create gives the client a current key unless it has one, on behalf of
// actor, and returns the current key: idempotent.
func (s *Service) Create(ctx context.Context, actor, clientID string) (storage.ClientAuthKey, error) {
	c, err := s.client(ctx, clientID)
	if err != nil {
		return storage.ClientAuthKey{}, err
	}
	if cur, err := s.opt.Store.GetCurrentClientAuthKey(ctx, c.ID); err == nil {
		return cur, nil
	} else if !errors.Is(err, storage.ErrNotFound) {
		return cur, err
	}
	k, err := s.newKey(c.ID)
	if err != nil {
		return k, err
	}
	stored, created, err := s.opt.Store.CreateClientAuthKey(ctx, k)
	if err != nil {
		return stored, err
	}
	if created {
		s.audit(ctx, actor, EventCreated, c.ID, map[string]any{"kid": stored.KID})
	}
	return stored, nil
}

// Current returns the client's current key.
func (s *Service) Current(ctx context.Context, clientID string) (storage.ClientAuthKey, error) {
	c, err := s.client(ctx, clientID)
	if err != nil {
		return storage.ClientAuthKey{}, err
	}
	k, err := s.opt.Store.GetCurrentClientAuthKey(ctx, c.ID)
	if errors.Is(err, storage.ErrNotFound) {
		return k, errKeyNotFound
	}
	return k, err
}

// List returns every key of the client, current first, then retiring,
// then revoked, newest first within a status.
func (s *Service) List(ctx context.Context, clientID string) ([]storage.ClientAuthKey, error) {
	c, err := s.client(ctx, clientID)
	if err != nil {
		return nil, err
	}
	keys, err := s.opt.Store.ListClientAuthKeys(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	sortByStatus(keys)
	return keys, nil
}

// Rotate makes the current key retiring and a new key current, on behalf
// of actor, and returns the new key and the retired one.
func (s *Service) Rotate(ctx context.Context, actor, clientID string) (next, retired storage.ClientAuthKey, err error) {
	c, err := s.client(ctx, clientID)
	if err != nil {
		return next, retired, err
	}
	if next, err = s.newKey(c.ID); err != nil {
		return next, retired, err
	}
	retired, err = s.opt.Store.RotateClientAuthKey(ctx, c.ID, next, s.opt.Now())
	if errors.Is(err, storage.ErrNotFound) {
		return next, retired, errNoKey
	}
	if err != nil {
		return next, retired, err
	}
	s.audit(ctx, actor, EventRotated, c.ID, map[string]any{
		"kid": next.KID, "retired_kid": retired.KID, "retiring_sessions": retired.SessionCount,
	})
	return next, retired, nil
}

// Revoke revokes a retiring key on behalf of actor and destroys its
// sessions, returning how many. Revoking a key already revoked is a no-op.
func (s *Service) Revoke(ctx context.Context, actor, clientID, kid string) (int64, error) {
	c, err := s.client(ctx, clientID)
	if err != nil {
		return 0, err
	}
	k, err := s.opt.Store.GetClientAuthKey(ctx, c.ID, kid)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return 0, errKeyNotFound
	case err != nil:
		return 0, err
	case k.Status == storage.AuthKeyCurrent:
		return 0, errRevokeCurrent
	case k.Status == storage.AuthKeyRevoked:
		return 0, nil
	}
	sessions, err := s.opt.Store.RevokeClientAuthKey(ctx, c.ID, kid, s.opt.Now())
	switch {
	case errors.Is(err, storage.ErrNotFound): // swept meanwhile
		return 0, errKeyNotFound
	case errors.Is(err, storage.ErrCurrentKey):
		return 0, errRevokeCurrent
	case err != nil:
		return 0, err
	}
	s.audit(ctx, actor, EventRevoked, c.ID, map[string]any{"kid": kid, "sessions_destroyed": sessions})
	return sessions, nil
}

// RevokeAll revokes every key of the client on behalf of actor, emptying
// its key set, and destroys every session pinned to one of them. A client
// that holds no current or retiring key (none yet, or only revoked ones)
// is refused (Invalid).
func (s *Service) RevokeAll(ctx context.Context, actor, clientID string) (keys, sessions int64, err error) {
	c, err := s.client(ctx, clientID)
	if err != nil {
		return 0, 0, err
	}
	keys, sessions, err = s.opt.Store.RevokeAllClientAuthKeys(ctx, c.ID, s.opt.Now())
	if errors.Is(err, storage.ErrNotFound) {
		return 0, 0, errNoKeyHeld
	}
	if err != nil {
		return 0, 0, err
	}
	s.audit(ctx, actor, EventRevokedAll, c.ID, map[string]any{"revoked": keys, "sessions_destroyed": sessions})
	return keys, sessions, nil
}

// KeySet is a client's published key set: its current key, then its
// retiring keys newest first; never revoked ones. An id without keys,
// known or not, has an empty set, so the answer says nothing about which
// ids exist.
func (s *Service) KeySet(ctx context.Context, clientID string) (oauth.JWKS, error) {
	set := oauth.NewJWKS()
	if !plausibleID(clientID) {
		return set, nil
	}
	keys, err := s.opt.Store.ListClientAuthKeys(ctx, clientID)
	if err != nil {
		return set, err
	}
	return publishedSet(keys)
}

// publishedSet is the key set of keys (newest first): the current key,
// then the retiring ones; never revoked ones.
func publishedSet(keys []storage.ClientAuthKey) (oauth.JWKS, error) {
	set := oauth.NewJWKS()
	for _, status := range []string{storage.AuthKeyCurrent, storage.AuthKeyRetiring} {
		for _, k := range keys {
			if k.Status != status {
				continue
			}
			j, err := PublicJWK(k)
			if err != nil {
				return set, err
			}
			set.Keys = append(set.Keys, j)
		}
	}
	return set, nil
}

// plausibleID reports whether id could be an API client id: at most 64
// letters, digits, '-' and '_'. Anything else cannot name a key set, and
// is not worth a query.
func plausibleID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range []byte(id) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Assertion is a signed client assertion.
type Assertion struct {
	JWT       string
	KID       string
	ExpiresAt time.Time
	IssuedAt  time.Time
}

var (
	errBadIssuer  = fail.New(fail.Invalid, "issuer must be an https URL (or http on a loopback host) without query or fragment")
	errUnknownKID = fail.New(fail.Invalid, "unknown kid")
	errRevokedKID = fail.New(fail.Invalid, "kid has been revoked")
)

// Sign signs a JWT-bearer client assertion (RFC 7523) for client c toward
// the authorization server named by issuer: iss and sub are the client's
// client_id_url, aud the issuer, and it expires after 60 seconds, with a
// fresh random jti (the authorization server refuses a replayed one).
// Without kid the current key signs (an initial authorization); a session
// refresh passes the kid it was established with, which may be retiring.
// Unknown and revoked kids are refused (Invalid).
func (s *Service) Sign(ctx context.Context, c storage.APIClient, issuer, kid string) (Assertion, error) {
	if !validIssuer(issuer) {
		return Assertion{}, errBadIssuer
	}
	var k storage.ClientAuthKey
	var err error
	if kid == "" {
		k, err = s.opt.Store.GetCurrentClientAuthKey(ctx, c.ID)
	} else {
		k, err = s.opt.Store.GetClientAuthKey(ctx, c.ID, kid)
	}
	switch {
	case errors.Is(err, storage.ErrNotFound) && kid == "":
		return Assertion{}, errNoKey
	case errors.Is(err, storage.ErrNotFound):
		return Assertion{}, errUnknownKID
	case err != nil:
		return Assertion{}, err
	}
	return signAssertion(s.opt.Sealer, k, c.ClientIDURL, issuer, s.opt.Now())
}

// signAssertion signs a client assertion for clientID toward issuer with
// k, refusing a revoked key.
func signAssertion(sealer *oauth.Sealer, k storage.ClientAuthKey, clientID, issuer string, now time.Time) (Assertion, error) {
	if !Published(k) {
		return Assertion{}, errRevokedKID
	}
	priv, err := PrivateKey(sealer, k)
	if err != nil {
		return Assertion{}, err
	}
	jwt, exp, err := oauth.NewClientAssertion(priv, k.KID, clientID, issuer, now)
	if err != nil {
		return Assertion{}, err
	}
	return Assertion{JWT: jwt, KID: k.KID, ExpiresAt: exp, IssuedAt: now}, nil
}

// validIssuer reports whether s can be an authorization server's issuer
// identifier: an https URL with a host, or an http URL on a loopback host
// (development servers), without user info, query or fragment.
func validIssuer(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" ||
		strings.Contains(s, "#") {
		return false
	}
	switch u.Scheme {
	case "https":
		return true
	case "http":
		host := u.Hostname()
		if strings.EqualFold(host, "localhost") {
			return true
		}
		ip := net.ParseIP(host)
		return ip != nil && ip.IsLoopback()
	}
	return false
}
