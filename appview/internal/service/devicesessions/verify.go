package devicesessions

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"net/url"
	"strings"

	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/oauth"
)

// Directory resolves a DID to its document (an indigo identity.Directory).
type Directory interface {
	LookupDID(ctx context.Context, did syntax.DID) (*identity.Identity, error)
}

// PDS asks a user's PDS and authorization server about a session before it
// is stored (an *oauth.Client).
type PDS interface {
	// AuthorizationServers returns the issuers the PDS trusts.
	AuthorizationServers(ctx context.Context, pdsURL string) ([]string, error)
	// Metadata fetches an authorization server's metadata; it fails unless
	// the server names itself issuer.
	Metadata(ctx context.Context, issuer string) (oauth.ServerMetadata, error)
	// SessionDID returns the DID the PDS says the session's token is for.
	SessionDID(ctx context.Context, s *oauth.UserSession) (string, error)
}

// Verifier proves what a registration claims before the session is stored:
// the DID's document names pds_url as its PDS, that PDS names issuer as its
// authorization server, and the PDS accepts the access token, bound to the
// provisioned key, as the DID's.
type Verifier struct {
	Directory Directory
	PDS       PDS
}

// Errors of a registration the network does not confirm.
var (
	errUnresolvable = fail.New(fail.Invalid, "did could not be resolved")
	errOtherPDS     = fail.New(fail.Invalid, "pds_url is not the PDS in the DID document")
	errOtherIssuer  = fail.New(fail.Invalid, "issuer is not an authorization server of the PDS")
	errTokenRefused = fail.New(fail.Invalid, "the PDS did not accept access_token with the provisioned key")
	errOtherAccount = fail.New(fail.Invalid, "access_token belongs to another account")
)

// upstream is the error for a PDS or authorization server that could not
// answer; the registration may be retried with the same provision.
func upstream(err error) error {
	return fail.Wrap(fail.Upstream, "upstream PDS failure", err)
}

// Verify checks req, whose tokens are bound to key. It returns the PDS URL
// and issuer as the network names them.
func (v *Verifier) Verify(ctx context.Context, req Registration, key *ecdsa.PrivateKey) (pdsURL, issuer string, err error) {
	did, err := syntax.ParseDID(req.DID)
	if err != nil {
		return "", "", errUnresolvable
	}
	ident, err := v.Directory.LookupDID(ctx, did)
	if err != nil {
		if errors.Is(err, identity.ErrDIDNotFound) {
			return "", "", fail.Wrap(fail.Invalid, errUnresolvable.Message, err)
		}
		return "", "", upstream(err)
	}
	pdsURL = ident.PDSEndpoint()
	if pdsURL == "" || !sameOrigin(pdsURL, req.PDSURL) {
		return "", "", errOtherPDS
	}
	issuers, err := v.PDS.AuthorizationServers(ctx, pdsURL)
	if err != nil {
		return "", "", upstream(err)
	}
	issuer = ""
	for _, is := range issuers {
		if sameOrigin(is, req.Issuer) {
			issuer = is
		}
	}
	if issuer == "" {
		return "", "", errOtherIssuer
	}
	if _, err := v.PDS.Metadata(ctx, issuer); err != nil {
		return "", "", upstream(err)
	}
	got, err := v.PDS.SessionDID(ctx, &oauth.UserSession{DID: req.DID, PDSURL: pdsURL, Issuer: issuer,
		AccessToken: req.AccessToken, DPoPKey: key})
	switch {
	case errors.Is(err, oauth.ErrTokenRefused):
		return "", "", errTokenRefused
	case err != nil:
		return "", "", upstream(err)
	case got != req.DID:
		return "", "", errOtherAccount
	}
	return strings.TrimRight(pdsURL, "/"), issuer, nil
}

// sameOrigin reports whether two absolute http(s) URLs with no path (or
// only "/") name the same scheme, host and port.
func sameOrigin(a, b string) bool {
	oa, okA := origin(a)
	ob, okB := origin(b)
	return okA && okB && oa == ob
}

// origin returns scheme://host:port of an http(s) URL with no path beyond
// "/", no query and no user information, lower-cased with the port made
// explicit.
func origin(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.Trim(u.Path, "/") != "" {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	switch {
	case scheme == "https" && port == "":
		port = "443"
	case scheme == "http" && port == "":
		port = "80"
	case scheme != "https" && scheme != "http":
		return "", false
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return "", false
	}
	return scheme + "://" + host + ":" + port, true
}
