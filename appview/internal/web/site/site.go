// Package site serves the instance's public, domain-scoped documents: each
// registered domain's atproto OAuth client metadata, the instance's OAuth
// key set, the front-end configuration (GET /config) and the instance
// logo. A request is answered for the registered domain its Host names;
// an unregistered Host is refused with 404 {"error": "unknown host"}, as
// /.well-known/did.json refuses it.
package site

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/domains"
	"github.com/lexview/lexview/appview/internal/service/instance"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
)

// Domains finds the registered domain a request arrived on.
type Domains interface {
	Match(ctx context.Context, host string) (storage.Domain, bool)
	Primary(ctx context.Context) (storage.Domain, bool)
}

// Branding resolves the instance's settings and logo.
type Branding interface {
	Branding(ctx context.Context) (instance.Branding, error)
	Logo(ctx context.Context) (storage.Blob, error)
}

// KeySet is the instance's published OAuth key set.
type KeySet interface {
	KeySet(ctx context.Context) (oauth.JWKS, error)
}

// Options configure the handlers.
type Options struct {
	Domains  Domains
	Branding Branding
	Keys     KeySet
	// DID returns the instance's DID ("" when it has none).
	DID func(ctx context.Context) string
	// Scopes returns the scopes the instance asks accounts for beyond
	// Scope (linked repo grants'); nil for none. Authorization servers
	// refuse a request for a scope the client metadata does not declare.
	Scopes func(ctx context.Context) ([]string, error)
	Logger *slog.Logger
}

// Handler serves the public site documents.
type Handler struct{ opt Options }

// New returns the handler.
func New(opt Options) *Handler { return &Handler{opt: opt} }

// Mount registers the routes on mux.
func (h *Handler) Mount(mux *http.ServeMux) {
	mux.HandleFunc("GET "+domains.ClientMetadataPath, h.clientMetadata)
	mux.HandleFunc("GET "+domains.JWKSPath, h.jwks)
	mux.HandleFunc("GET /config", h.config)
	mux.HandleFunc("GET "+domains.LogoPath, h.logo)
}

// The OAuth client every domain is: a confidential web client that signs
// its token requests with the instance key (private_key_jwt, ES256) and
// asks for DPoP-bound tokens.
const (
	Scope           = "atproto transition:generic"
	authMethod      = "private_key_jwt"
	signingAlg      = oauth.SigningAlgorithm
	applicationType = "web"
)

var errUnknownHost = fail.New(fail.NotFound, "unknown host")

// ClientMetadataDocument is an atproto OAuth client metadata document,
// with the field names of the atproto OAuth specification.
type ClientMetadataDocument struct {
	ClientID                    string   `json:"client_id"`
	ApplicationType             string   `json:"application_type"`
	ClientName                  string   `json:"client_name"`
	ClientURI                   string   `json:"client_uri"`
	LogoURI                     string   `json:"logo_uri,omitempty"`
	TosURI                      string   `json:"tos_uri,omitempty"`
	PolicyURI                   string   `json:"policy_uri,omitempty"`
	GrantTypes                  []string `json:"grant_types"`
	ResponseTypes               []string `json:"response_types"`
	Scope                       string   `json:"scope"`
	RedirectURIs                []string `json:"redirect_uris"`
	DPoPBoundAccessTokens       bool     `json:"dpop_bound_access_tokens"`
	TokenEndpointAuthMethod     string   `json:"token_endpoint_auth_method"`
	TokenEndpointAuthSigningAlg string   `json:"token_endpoint_auth_signing_alg"`
	JWKSURI                     string   `json:"jwks_uri"`
}

// ClientMetadata is the client metadata document of the domain origin,
// branded by b: every URL in it is on that domain. Its scope is Scope and
// the extra scopes, each once.
func ClientMetadata(origin string, b instance.Branding, extra ...string) ClientMetadataDocument {
	m := ClientMetadataDocument{
		ClientID:                    domains.ClientID(origin),
		ApplicationType:             applicationType,
		ClientName:                  b.AppName,
		ClientURI:                   origin,
		TosURI:                      b.TermsOfServiceURL,
		PolicyURI:                   b.PrivacyPolicyURL,
		GrantTypes:                  []string{"authorization_code", "refresh_token"},
		ResponseTypes:               []string{"code"},
		Scope:                       scopeString(extra),
		RedirectURIs:                []string{domains.RedirectURI(origin)},
		DPoPBoundAccessTokens:       true,
		TokenEndpointAuthMethod:     authMethod,
		TokenEndpointAuthSigningAlg: signingAlg,
		JWKSURI:                     domains.JWKSURI(origin),
	}
	if b.HasLogo {
		m.LogoURI = origin + domains.LogoPath
	}
	return m
}

// domain is the registered domain r arrived on, or errUnknownHost.
func (h *Handler) domain(r *http.Request) (storage.Domain, error) {
	d, ok := h.opt.Domains.Match(r.Context(), r.Host)
	if !ok {
		return d, errUnknownHost
	}
	return d, nil
}

func (h *Handler) clientMetadata(w http.ResponseWriter, r *http.Request) {
	d, err := h.domain(r)
	var b instance.Branding
	if err == nil {
		b, err = h.opt.Branding.Branding(r.Context())
	}
	var extra []string
	if err == nil && h.opt.Scopes != nil {
		extra, err = h.opt.Scopes(r.Context())
	}
	if err != nil {
		respond.Fail(w, r, h.opt.Logger, err)
		return
	}
	respond.JSON(w, http.StatusOK, ClientMetadata(d.URL, b, extra...))
}

// scopeString is Scope with the extra scopes, each once, in order.
func scopeString(extra []string) string {
	out := strings.Fields(Scope)
	for _, sc := range extra {
		if !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	return strings.Join(out, " ")
}

func (h *Handler) jwks(w http.ResponseWriter, r *http.Request) {
	if _, err := h.domain(r); err != nil {
		respond.Fail(w, r, h.opt.Logger, err)
		return
	}
	set, err := h.opt.Keys.KeySet(r.Context())
	if err != nil {
		respond.Fail(w, r, h.opt.Logger, err)
		return
	}
	respond.JSON(w, http.StatusOK, set)
}

// Config is the public front-end configuration GET /config answers.
type Config struct {
	AppName           string  `json:"app_name"`
	LogoURL           *string `json:"logo_url"`
	TermsOfServiceURL *string `json:"terms_of_service_url"`
	PrivacyPolicyURL  *string `json:"privacy_policy_url"`
	// DID is the instance's DID; null when it has none.
	DID *string `json:"did"`
	// PrimaryDomain is the primary domain's origin; null when none.
	PrimaryDomain *string `json:"primary_domain"`
	// Domain is the origin of the domain the request arrived on, and
	// ClientID its OAuth client_id.
	Domain   string `json:"domain"`
	ClientID string `json:"client_id"`
}

func (h *Handler) config(w http.ResponseWriter, r *http.Request) {
	d, err := h.domain(r)
	if err != nil {
		respond.Fail(w, r, h.opt.Logger, err)
		return
	}
	b, err := h.opt.Branding.Branding(r.Context())
	if err != nil {
		respond.Fail(w, r, h.opt.Logger, err)
		return
	}
	ptr := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	c := Config{
		AppName: b.AppName, TermsOfServiceURL: ptr(b.TermsOfServiceURL), PrivacyPolicyURL: ptr(b.PrivacyPolicyURL),
		DID: ptr(h.opt.DID(r.Context())), Domain: d.URL, ClientID: domains.ClientID(d.URL),
	}
	if b.HasLogo {
		c.LogoURL = ptr(d.URL + domains.LogoPath)
	}
	if p, ok := h.opt.Domains.Primary(r.Context()); ok {
		c.PrimaryDomain = ptr(p.URL)
	}
	w.Header().Set("Cache-Control", "no-cache")
	respond.JSON(w, http.StatusOK, c)
}

// logo serves the stored logo with its media type; 404 when none. It is
// served on any host (an image, not a domain's document). SVG may hold
// scripts, so the answer forbids running anything.
func (h *Handler) logo(w http.ResponseWriter, r *http.Request) {
	b, err := h.opt.Branding.Logo(r.Context())
	if errors.Is(err, storage.ErrNotFound) {
		respond.Error(w, http.StatusNotFound, "no logo")
		return
	}
	if err != nil {
		respond.Fail(w, r, h.opt.Logger, err)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", b.ContentType)
	hd.Set("Content-Length", strconv.Itoa(len(b.Data)))
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox")
	hd.Set("Cache-Control", "public, max-age=300")
	if !b.UpdatedAt.IsZero() {
		hd.Set("Last-Modified", b.UpdatedAt.UTC().Format(http.TimeFormat))
	}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b.Data)
	}
}
