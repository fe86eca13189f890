package adminapi

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/core/serviceauth"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/web/sessioncookie"
)

// Authenticator identifies admin callers: by admin API key, by service-auth
// JWT, or by the dashboard session cookie, in that order. It reads the
// credential from the request and verifies the JWT or the cookie; the
// admins service decides who the credential stands for.
type Authenticator struct {
	jwt     *serviceauth.Verifier
	cookies *sessioncookie.Codec
	domains sessioncookie.DomainMatcher
	admins  *admins.Service
	log     *slog.Logger
}

// AuthenticatorOptions configure an Authenticator.
type AuthenticatorOptions struct {
	// ServiceAuth verifies service-auth JWTs.
	ServiceAuth *serviceauth.Verifier
	// Cookies decodes the dashboard session cookie.
	Cookies *sessioncookie.Codec
	// Domains are the registered domains a state-changing request
	// authenticated by the cookie must come from (nil: none, so such
	// requests are refused).
	Domains sessioncookie.DomainMatcher
	// Admins decides who a credential stands for.
	Admins *admins.Service
	Logger *slog.Logger // default slog.Default()
}

// NewAuthenticator builds an Authenticator.
func NewAuthenticator(opts AuthenticatorOptions) *Authenticator {
	a := &Authenticator{jwt: opts.ServiceAuth, cookies: opts.Cookies, domains: opts.Domains, admins: opts.Admins, log: opts.Logger}
	if a.log == nil {
		a.log = slog.Default()
	}
	return a
}

var (
	errNoCredentials = fail.New(fail.Unauthenticated, "authentication required")
	// errBoundToMethod refuses a service-auth token minted for one XRPC
	// method (lxm): it was given to call that method, not to administer.
	errBoundToMethod = fmt.Errorf("%w: a token bound to a method (lxm) is not accepted on the admin API", serviceauth.ErrInvalidToken)
	errBadSession    = fail.New(fail.Unauthenticated, "invalid session")
	errBadScheme     = fail.New(fail.Unauthenticated, "unsupported authorization scheme")
	errCrossSite     = fail.New(fail.Forbidden, CrossSiteMessage)
)

// CrossSiteMessage refuses a state-changing request authenticated by the
// session cookie that does not come from a registered domain.
const CrossSiteMessage = "cross-site request refused: a request that changes state with the session cookie must carry " +
	"an Origin (or Referer) header naming a registered domain of this instance"

// Authenticate identifies the caller of r.
func (a *Authenticator) Authenticate(r *http.Request) (*admins.Principal, error) {
	ctx := r.Context()
	if authz := r.Header.Get("Authorization"); authz != "" {
		scheme, cred, _ := strings.Cut(authz, " ")
		if !strings.EqualFold(scheme, "Bearer") || cred == "" {
			return nil, errBadScheme
		}
		if strings.HasPrefix(cred, admins.KeyPrefix) {
			return a.admins.ByKey(ctx, cred)
		}
		claims, err := a.jwt.Verify(ctx, cred)
		if err == nil && claims.Method != "" {
			err = errBoundToMethod
		}
		if err != nil {
			a.log.DebugContext(ctx, "service auth refused", "err", err, "cause", serviceauth.Cause(err))
			return nil, fail.Wrap(fail.Unauthenticated, err.Error(), err)
		}
		return a.admins.ByDID(ctx, claims.Issuer, r.Header.Get(admins.ClaimTokenHeader))
	}
	did, err := a.cookies.FromRequest(r)
	if errors.Is(err, http.ErrNoCookie) {
		return nil, errNoCredentials
	}
	if err != nil {
		return nil, errBadSession
	}
	if !sessioncookie.Safe(r.Method) && (a.domains == nil || !sessioncookie.SameSite(r, a.domains)) {
		return nil, errCrossSite
	}
	return a.admins.ByDID(ctx, did, r.Header.Get(admins.ClaimTokenHeader))
}
