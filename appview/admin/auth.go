package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/eventlog"
	"github.com/lexview/lexview/appview/serviceauth"
	"github.com/lexview/lexview/appview/session"
	"github.com/lexview/lexview/storage"
)

// KeyPrefix starts every admin API key secret.
const KeyPrefix = "hv_"

// Principal is an authenticated admin caller.
type Principal struct {
	User storage.AdminUser
	// KeyID is set when the caller used an admin API key.
	KeyID string
	// Perms are the effective permissions: the user's, or for an API key
	// the intersection of the key's and its creator's.
	Perms Set
}

// DID is the caller's DID.
func (p *Principal) DID() string { return p.User.DID }

// Authenticator identifies admin callers: by admin API key, by service-auth
// JWT, or by the dashboard session cookie, in that order.
type Authenticator struct {
	store   storage.AdminStore
	jwt     *serviceauth.Verifier
	cookies *session.Codec
	events  *eventlog.Log
	now     func() time.Time
	log     *slog.Logger

	touchMu sync.Mutex
	touched map[string]time.Time // debounces last_used_at writes
}

// NewAuthenticator builds an Authenticator.
func NewAuthenticator(store storage.AdminStore, jwt *serviceauth.Verifier, cookies *session.Codec,
	events *eventlog.Log, now func() time.Time, log *slog.Logger) *Authenticator {
	return &Authenticator{store: store, jwt: jwt, cookies: cookies, events: events, now: now, log: log,
		touched: map[string]time.Time{}}
}

// authError is an authentication failure with its HTTP answer.
type authError struct {
	status int
	msg    string
}

func (e *authError) Error() string { return e.msg }

var (
	errNoCredentials = &authError{http.StatusUnauthorized, "authentication required"}
	errBadKey        = &authError{http.StatusUnauthorized, "invalid API key"}
	errBadToken      = &authError{http.StatusUnauthorized, "invalid service auth token"}
	errBadSession    = &authError{http.StatusUnauthorized, "invalid session"}
	errBadScheme     = &authError{http.StatusUnauthorized, "unsupported authorization scheme"}
	errForbidden     = &authError{http.StatusForbidden, "forbidden"}
)

// HashKey returns the stored form (hex SHA-256) of an API secret.
func HashKey(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// Authenticate identifies the caller of r.
func (a *Authenticator) Authenticate(r *http.Request) (*Principal, error) {
	ctx := r.Context()
	if authz := r.Header.Get("Authorization"); authz != "" {
		scheme, cred, _ := strings.Cut(authz, " ")
		if !strings.EqualFold(scheme, "Bearer") || cred == "" {
			return nil, errBadScheme
		}
		if strings.HasPrefix(cred, KeyPrefix) {
			return a.byKey(ctx, cred)
		}
		claims, err := a.jwt.Verify(ctx, cred)
		if err != nil {
			a.log.DebugContext(ctx, "service auth refused", "err", err)
			return nil, errBadToken
		}
		return a.byDID(ctx, claims.Issuer)
	}
	did, err := a.cookies.FromRequest(r)
	if errors.Is(err, http.ErrNoCookie) {
		return nil, errNoCredentials
	}
	if err != nil {
		return nil, errBadSession
	}
	return a.byDID(ctx, did)
}

func (a *Authenticator) byKey(ctx context.Context, secret string) (*Principal, error) {
	hash := HashKey(secret)
	key, err := a.store.GetAdminAPIKeyByHash(ctx, hash)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, errBadKey
	}
	if err != nil {
		return nil, err
	}
	if subtle.ConstantTimeCompare([]byte(key.Hash), []byte(hash)) != 1 {
		return nil, errBadKey
	}
	user, err := a.store.GetAdminUser(ctx, key.UserID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, errBadKey // the creator was removed
	}
	if err != nil {
		return nil, err
	}
	a.touch(ctx, "key:"+key.ID, func(at time.Time) error { return a.store.TouchAdminAPIKey(ctx, key.ID, at) })
	a.touch(ctx, "user:"+user.ID, func(at time.Time) error { return a.store.TouchAdminUser(ctx, user.ID, at) })
	return &Principal{User: user, KeyID: key.ID, Perms: NewSet(key.Permissions).Intersect(userPerms(user))}, nil
}

func (a *Authenticator) byDID(ctx context.Context, did syntax.DID) (*Principal, error) {
	user, err := a.store.GetAdminUserByDID(ctx, did.String())
	if errors.Is(err, storage.ErrNotFound) {
		user, err = a.bootstrap(ctx, did)
	}
	if err != nil {
		return nil, err
	}
	a.touch(ctx, "user:"+user.ID, func(at time.Time) error { return a.store.TouchAdminUser(ctx, user.ID, at) })
	return &Principal{User: user, Perms: userPerms(user)}, nil
}

// bootstrap makes did the super user when no admin user exists yet, and
// refuses it (403) otherwise.
func (a *Authenticator) bootstrap(ctx context.Context, did syntax.DID) (storage.AdminUser, error) {
	u := storage.AdminUser{ID: storage.NewID(), DID: did.String(), IsSuper: true, Permissions: NewSet(All()).Sorted(), CreatedAt: a.now()}
	stored, err := a.store.BootstrapSuperUser(ctx, u)
	if err != nil {
		return storage.AdminUser{}, err
	}
	if stored {
		a.log.InfoContext(ctx, "bootstrap: first admin became the super user", "did", did)
		a.events.Record(ctx, eventlog.Entry{Type: "user.bootstrapped", ActorDID: did.String(), Subject: did.String()})
		return u, nil
	}
	// Someone else bootstrapped meanwhile; maybe this very DID.
	user, err := a.store.GetAdminUserByDID(ctx, did.String())
	if errors.Is(err, storage.ErrNotFound) {
		return storage.AdminUser{}, errForbidden
	}
	return user, err
}

// userPerms is a user's effective permission set; the super user holds
// every permission, including ones added after it was created.
func userPerms(u storage.AdminUser) Set {
	if u.IsSuper {
		return NewSet(All())
	}
	return NewSet(u.Permissions)
}

// touch records a use at most once a minute per subject.
func (a *Authenticator) touch(ctx context.Context, subject string, write func(time.Time) error) {
	now := a.now()
	a.touchMu.Lock()
	last, seen := a.touched[subject]
	if seen && now.Sub(last) < time.Minute {
		a.touchMu.Unlock()
		return
	}
	a.touched[subject] = now
	a.touchMu.Unlock()
	if err := write(now); err != nil {
		a.log.WarnContext(ctx, "recording last use failed", "subject", subject, "err", err)
	}
}
