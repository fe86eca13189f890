package admin

import (
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/admins"
	"github.com/lexview/lexview/appview/internal/fail"
	"github.com/lexview/lexview/appview/internal/serviceauth"
	"github.com/lexview/lexview/appview/internal/session"
	"github.com/lexview/lexview/storage"
)

// Authenticator identifies admin callers: by admin API key, by service-auth
// JWT, or by the dashboard session cookie, in that order.
type Authenticator struct {
	store   storage.AdminStore
	jwt     *serviceauth.Verifier
	cookies *session.Codec
	admins  *admins.Service
	now     func() time.Time
	log     *slog.Logger

	touchMu sync.Mutex
	touched map[string]time.Time // debounces last_used_at writes
}

// NewAuthenticator builds an Authenticator.
func NewAuthenticator(store storage.AdminStore, jwt *serviceauth.Verifier, cookies *session.Codec,
	svc *admins.Service, now func() time.Time, log *slog.Logger) *Authenticator {
	return &Authenticator{store: store, jwt: jwt, cookies: cookies, admins: svc, now: now, log: log,
		touched: map[string]time.Time{}}
}

var (
	errNoCredentials = fail.New(fail.Unauthenticated, "authentication required")
	errBadKey        = fail.New(fail.Unauthenticated, "invalid API key")
	errBadToken      = fail.New(fail.Unauthenticated, "invalid service auth token")
	errBadSession    = fail.New(fail.Unauthenticated, "invalid session")
	errBadScheme     = fail.New(fail.Unauthenticated, "unsupported authorization scheme")
)

// Authenticate identifies the caller of r.
func (a *Authenticator) Authenticate(r *http.Request) (*admins.Principal, error) {
	ctx := r.Context()
	if authz := r.Header.Get("Authorization"); authz != "" {
		scheme, cred, _ := strings.Cut(authz, " ")
		if !strings.EqualFold(scheme, "Bearer") || cred == "" {
			return nil, errBadScheme
		}
		if strings.HasPrefix(cred, admins.KeyPrefix) {
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

func (a *Authenticator) byKey(ctx context.Context, secret string) (*admins.Principal, error) {
	hash := admins.HashKey(secret)
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
	return &admins.Principal{User: user, KeyID: key.ID, Perms: admins.NewSet(key.Permissions).Intersect(admins.EffectivePermissions(user))}, nil
}

func (a *Authenticator) byDID(ctx context.Context, did syntax.DID) (*admins.Principal, error) {
	user, err := a.store.GetAdminUserByDID(ctx, did.String())
	if errors.Is(err, storage.ErrNotFound) {
		user, err = a.admins.ClaimFirst(ctx, did)
	}
	if err != nil {
		return nil, err
	}
	a.touch(ctx, "user:"+user.ID, func(at time.Time) error { return a.store.TouchAdminUser(ctx, user.ID, at) })
	return &admins.Principal{User: user, Perms: admins.EffectivePermissions(user)}, nil
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
