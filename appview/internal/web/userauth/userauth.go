// Package userauth identifies the user behind an XRPC or /oauth/* request,
// in the specification's order: a DPoP-bound session of the calling API
// client, a bearer service-auth JWT, the dashboard session cookie, or
// nobody (anonymous).
package userauth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/lexview/lexview/appview/internal/core/caller"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/core/serviceauth"
	"github.com/lexview/lexview/appview/internal/service/devicesessions"
	"github.com/lexview/lexview/appview/internal/web/sessioncookie"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
)

// unauthorized is an authentication failure: an Unauthenticated service
// error whose message the specification fixes.
func unauthorized(msg string) error { return fail.New(fail.Unauthenticated, msg) }

// Error messages.
const (
	MsgNeedsDPoP      = caller.MsgNeedsDPoP
	msgMissingProof   = "missing DPoP proof"
	msgInvalidProof   = "invalid DPoP proof"
	msgReplayedProof  = "DPoP proof has already been used"
	msgNoSession      = "no session for this DPoP key"
	msgBadAccessToken = "invalid access token"
	msgBadServiceAuth = "invalid service auth token"
	msgBadSession     = "invalid session"
	msgAdminKey       = "admin API keys are not accepted here"
	msgCrossSite      = "cross-site request refused: a request that changes state with the session cookie must carry " +
		"an Origin (or Referer) header naming a registered domain of this instance"
)

// SessionStore is the persistence DPoP authentication reads.
type SessionStore interface {
	GetDeviceSessionByJKT(ctx context.Context, clientID, jkt string) (storage.DeviceSession, error)
}

// Authenticator identifies users.
type Authenticator struct {
	Store       SessionStore
	Sealer      *oauth.Sealer
	DPoP        *oauth.Verifier
	ServiceAuth *serviceauth.Verifier
	Cookies     *sessioncookie.Codec
	// PublicURL's scheme and host prefix a DPoP `htu` when the request's
	// Host is not a registered domain (or Domains is nil).
	PublicURL string
	// Domains finds the registered domain a request arrived on: its
	// origin prefixes the `htu`. nil: PublicURL always does.
	Domains DomainMatcher
	Now     func() time.Time
}

// Authenticate identifies the user of r, an XRPC request of the API client
// clientID. It returns (nil, nil) for an anonymous request and an *Error
// for refused credentials. Admin API keys are refused.
func (a *Authenticator) Authenticate(r *http.Request, clientID string) (*caller.User, error) {
	authz := r.Header.Get("Authorization")
	scheme, cred, _ := strings.Cut(authz, " ")
	switch {
	case authz == "":
		return a.cookie(r)
	case strings.EqualFold(scheme, "DPoP"):
		s, err := a.DPoPSession(r, clientID)
		if err != nil {
			return nil, err
		}
		return &caller.User{DID: s.DID, Via: caller.ViaDPoP, SessionID: s.ID}, nil
	case strings.EqualFold(scheme, "Bearer") && strings.HasPrefix(cred, "hv_"):
		return nil, unauthorized(msgAdminKey)
	case strings.EqualFold(scheme, "Bearer"):
		claims, err := a.ServiceAuth.Verify(r.Context(), strings.TrimSpace(cred))
		if err != nil {
			return nil, fail.Wrap(fail.Unauthenticated, err.Error(), err)
		}
		if method := strings.TrimPrefix(r.URL.Path, "/xrpc/"); claims.Method != "" && claims.Method != method {
			return nil, unauthorized(msgBadServiceAuth + ": the token is bound to another method (lxm " + claims.Method + ")")
		}
		return &caller.User{DID: claims.Issuer.String(), Via: caller.ViaServiceAuth, Audience: claims.Audience}, nil
	}
	return nil, unauthorized("unsupported authorization scheme")
}

func (a *Authenticator) cookie(r *http.Request) (*caller.User, error) {
	if a.Cookies == nil {
		return nil, nil
	}
	did, err := a.Cookies.FromRequest(r)
	if errors.Is(err, http.ErrNoCookie) {
		return nil, nil
	}
	if err != nil {
		return nil, unauthorized(msgBadSession)
	}
	if !sessioncookie.Safe(r.Method) && (a.Domains == nil || !sessioncookie.SameSite(r, a.Domains)) {
		return nil, fail.New(fail.Forbidden, msgCrossSite)
	}
	return &caller.User{DID: did.String(), Via: caller.ViaSession}, nil
}

// DomainMatcher finds the registered domain a request's Host names.
type DomainMatcher interface {
	Match(ctx context.Context, host string) (storage.Domain, bool)
}

// RequestURL is the `htu` a DPoP proof for r must carry: the origin of the
// registered domain the request arrived on (PublicURL's when its Host is
// not a registered domain), and the path exactly as sent (a
// percent-encoded DID stays encoded), without query.
func (a *Authenticator) RequestURL(r *http.Request) string {
	if a.Domains != nil {
		// PUBLIC_URL's own domain keeps PUBLIC_URL, path prefix included.
		if d, ok := a.Domains.Match(r.Context(), r.Host); ok && !underOrigin(a.PublicURL, d.URL) {
			return d.URL + r.URL.EscapedPath()
		}
	}
	return strings.TrimRight(a.PublicURL, "/") + r.URL.EscapedPath()
}

// underOrigin reports whether rawURL is origin, optionally followed by a
// path.
func underOrigin(rawURL, origin string) bool {
	rest, ok := strings.CutPrefix(strings.ToLower(rawURL), origin)
	return ok && (rest == "" || rest[0] == '/')
}

// DPoPSession checks DPoP authentication (`Authorization: DPoP <token>`
// and a `DPoP` proof) for the API client clientID and returns the device
// session the proof's key belongs to. When the proof's replay check cannot
// be made (the verifier's shared store failed) the request is refused
// with a server error, not accepted.
func (a *Authenticator) DPoPSession(r *http.Request, clientID string) (*storage.DeviceSession, error) {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "DPoP") || token == "" {
		return nil, unauthorized(MsgNeedsDPoP)
	}
	proof := r.Header.Get("DPoP")
	if proof == "" {
		return nil, unauthorized(msgMissingProof)
	}
	p, err := a.DPoP.Verify(r.Context(), proof, r.Method, a.RequestURL(r), token)
	if errors.Is(err, oauth.ErrReplay) {
		return nil, unauthorized(msgReplayedProof)
	}
	if errors.Is(err, oauth.ErrInvalidProof) {
		return nil, unauthorized(msgInvalidProof)
	}
	if err != nil {
		// The replay check could not be made (the shared store failed):
		// refused as a server failure, never accepted.
		return nil, fmt.Errorf("DPoP proof: %w", err)
	}
	s, err := a.Store.GetDeviceSessionByJKT(r.Context(), clientID, p.JKT)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, unauthorized(msgNoSession)
	}
	if err != nil {
		return nil, err
	}
	// The app presents the token it registered; after Lexview refreshed the
	// PDS tokens itself, the current one is accepted too.
	expires := s.ExpiresAt
	if s.AppTokenHash != "" && subtle.ConstantTimeCompare([]byte(devicesessions.TokenHash(token)), []byte(s.AppTokenHash)) == 1 {
		expires = s.AppExpiresAt
	} else {
		stored, err := a.Sealer.OpenString(devicesessions.AccessTokenPurpose(s.ID), s.SealedAccessToken)
		if err != nil || subtle.ConstantTimeCompare([]byte(stored), []byte(token)) != 1 {
			return nil, unauthorized(msgBadAccessToken)
		}
	}
	if !a.now().Before(expires) {
		return nil, unauthorized(caller.MsgTokenExpired)
	}
	return &s, nil
}

func (a *Authenticator) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}
