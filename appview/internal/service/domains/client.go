package domains

import "strings"

// Each registered domain is an atproto OAuth client of its own: its
// client_id is the URL of its client metadata document, served on that
// domain, and its redirect URI and key set URL are on that domain too.
const (
	// ClientMetadataPath is where a domain serves its client metadata
	// document; the document's URL on the domain is its client_id.
	ClientMetadataPath = "/oauth-client-metadata.json"
	// CallbackPath is the path of a domain's OAuth redirect URI.
	CallbackPath = "/oauth/callback"
	// JWKSPath is the path of the instance's key set (its OAuth client
	// keys), served on every domain.
	JWKSPath = "/oauth/jwks.json"
	// LogoPath is where the instance logo is served on every domain.
	LogoPath = "/settings/logo"
)

// ClientID is the OAuth client_id of the domain origin.
func ClientID(origin string) string { return origin + ClientMetadataPath }

// RedirectURI is the OAuth redirect URI of the domain origin.
func RedirectURI(origin string) string { return origin + CallbackPath }

// JWKSURI is the key set URL the domain origin's client metadata names.
func JWKSURI(origin string) string { return origin + JWKSPath }

// NormalHost lower-cases a request's Host and drops a default port (:80 or
// :443), the form Host returns for a registered origin.
func NormalHost(host string) string {
	host = strings.ToLower(host)
	for _, p := range []string{":443", ":80"} {
		host = strings.TrimSuffix(host, p)
	}
	return host
}
