// Package oauthclient is the instance as an atproto OAuth client of
// accounts' authorization servers: it starts authorization flows (PAR,
// PKCE, DPoP) on the registered domain a request came in on, finishes them
// on that domain's callback, and keeps the resulting sessions sealed at
// rest. The protocol itself is indigo's atproto/auth/oauth ClientApp; this
// package gives it per-domain client configuration, the instance OAuth key
// for client assertions, and a sealed, storage-backed store.
//
// A flow has a purpose (an admin sign-in, a linked-repo grant): it is
// stored with the pending request, and the callback hands it back so the
// caller can dispatch the result (web/oauthcallback does).
package oauthclient

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	indigooauth "github.com/bluesky-social/indigo/atproto/auth/oauth"
	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/domains"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
)

// DefaultRequestTTL is how long a started flow may take to come back on
// the callback.
const DefaultRequestTTL = 10 * time.Minute

// InstanceKey is the instance OAuth key the client signs its assertions
// with (clientkeys.Instance).
type InstanceKey interface {
	// Ensure returns the current key, making one when there is none.
	Ensure(ctx context.Context) (storage.ClientAuthKey, error)
}

// Options configure a Client.
type Options struct {
	Store storage.OAuthClientStore
	// Sealer seals pending requests and sessions; nil turns the client
	// off (every flow is refused).
	Sealer *oauth.Sealer
	// Key is the instance OAuth key; PrivateKey opens it.
	Key        InstanceKey
	PrivateKey func(storage.ClientAuthKey) (*ecdsa.PrivateKey, error)
	// HTTPClient makes every outbound call (metadata, PAR, token).
	HTTPClient *http.Client
	// Directory resolves handles and DIDs to PDSes.
	Directory identity.Directory
	// AllowHTTP accepts authorization servers on http and with a port
	// (development and tests, with AllowPrivateNetworks); otherwise they
	// must be https on the default port, as atproto requires.
	AllowHTTP bool
	// RequestTTL bounds a flow (DefaultRequestTTL when zero).
	RequestTTL time.Duration
	UserAgent  string
	Now        func() time.Time
	Logger     *slog.Logger
	// Leases, when set, make WithSession hold a session against the other
	// instances sharing the database too (a lease per session, held by
	// Holder, this instance's ID); nil holds it within the process only.
	Leases SessionLeases
	Holder string
}

// Client starts and finishes OAuth flows as the instance.
type Client struct {
	opt   Options
	locks sessionLocks // one user of a kept session at a time (WithSession)
}

// New returns a Client.
func New(opt Options) *Client {
	if opt.RequestTTL <= 0 {
		opt.RequestTTL = DefaultRequestTTL
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	return &Client{opt: opt}
}

// Request describes a flow to start.
type Request struct {
	// DomainOrigin is the registered domain the flow runs on (its client
	// metadata and callback); see Domain.
	DomainOrigin string
	// Identifier is the account to sign in: a handle or a DID.
	Identifier string
	// Scopes are requested; "atproto" is added when missing.
	Scopes []string
	// Purpose names what the callback finishes (PurposeAdminSignIn, ...);
	// Subject is the purpose's own reference (a grant ID), may be empty.
	Purpose string
	Subject string
}

// Result is a finished flow.
type Result struct {
	Purpose   string
	Subject   string
	DID       syntax.DID
	SessionID string
	Scopes    []string
	// DomainOrigin is the domain the flow ran on.
	DomainOrigin string
}

var (
	errOff          = fail.New(fail.Unavailable, "sign-in through a PDS needs TOKEN_ENCRYPTION_KEY (token encryption is off)")
	errBadState     = fail.New(fail.Invalid, "invalid OAuth callback: unknown, used or expired state")
	errNoState      = fail.New(fail.Invalid, "invalid OAuth callback: missing state")
	errOtherDomain  = fail.New(fail.Invalid, "invalid OAuth callback: the flow was started on another domain")
	errNoIdentifier = fail.New(fail.Invalid, "a handle or DID is required")
)

// Purpose of a sealed value: a request's data, a session's data.
func requestSealPurpose(state string) string { return "oauthclient:request:" + state }
func sessionSealPurpose(did, sessionID string) string {
	return "oauthclient:session:" + did + ":" + sessionID
}

// Authorize starts a flow: it resolves the account to its authorization
// server, pushes the authorization request (PAR with PKCE and DPoP, a
// client assertion unless the domain is a loopback development client),
// stores the pending request sealed and returns the URL to send the
// user's browser to.
func (c *Client) Authorize(ctx context.Context, req Request) (string, error) {
	if c.opt.Sealer == nil {
		return "", errOff
	}
	ident := strings.TrimPrefix(strings.TrimSpace(req.Identifier), "@")
	if ident == "" {
		return "", errNoIdentifier
	}
	atid, err := syntax.ParseAtIdentifier(ident)
	if err != nil {
		return "", fail.New(fail.Invalid, "invalid handle or DID: "+ident)
	}
	account, err := c.opt.Directory.Lookup(ctx, atid)
	if err != nil {
		return "", fail.Wrap(fail.Invalid, "cannot resolve "+ident, err)
	}
	pds := account.PDSEndpoint()
	if pds == "" {
		return "", fail.New(fail.Invalid, ident+" names no PDS")
	}
	meta, err := c.discover(ctx, pds)
	if err != nil {
		return "", fail.Wrap(fail.Upstream, "cannot reach the authorization server of "+ident+": "+err.Error(), err)
	}
	scopes := withAtproto(req.Scopes)
	cfg, err := c.config(ctx, req.DomainOrigin, "", scopes)
	if err != nil {
		return "", err
	}
	app := c.app(cfg, nil)
	info, err := app.SendAuthRequest(ctx, meta, scopes, ident)
	if err != nil {
		return "", fail.Wrap(fail.Upstream, "the authorization server refused the request: "+err.Error(), err)
	}
	info.AccountDID = &account.DID
	data, err := json.Marshal(info)
	if err != nil {
		return "", err
	}
	sealed, err := c.opt.Sealer.Seal(requestSealPurpose(info.State), data)
	if err != nil {
		return "", err
	}
	now := c.opt.Now()
	if err := c.opt.Store.CreateOAuthAuthRequest(ctx, storage.OAuthAuthRequest{
		State: info.State, Purpose: req.Purpose, Subject: req.Subject, DomainOrigin: callbackOrigin(cfg.CallbackURL),
		ClientID: cfg.ClientID, AccountDID: account.DID.String(), SealedData: sealed,
		CreatedAt: now, ExpiresAt: now.Add(c.opt.RequestTTL),
	}); err != nil {
		return "", fmt.Errorf("oauthclient: store request: %w", err)
	}
	q := url.Values{"client_id": {cfg.ClientID}, "request_uri": {info.RequestURI}}
	return meta.AuthorizationEndpoint + "?" + q.Encode(), nil
}

// Callback finishes the flow whose state params carries, arriving on the
// host host (the callback request's Host): it takes the pending request
// (single use: a replayed, forged or expired state is refused), checks it
// was started for this host, exchanges the code (checking the issuer and
// that the account is the one the flow started for) and stores the
// session sealed. A refusal of a flow whose pending request was found
// comes with a Result naming its Purpose and Subject (and nothing else),
// so that the purpose's front end can answer it.
func (c *Client) Callback(ctx context.Context, host string, params url.Values) (Result, error) {
	if c.opt.Sealer == nil {
		return Result{}, errOff
	}
	state := params.Get("state")
	if state == "" {
		return Result{}, errNoState
	}
	row, err := c.opt.Store.TakeOAuthAuthRequest(ctx, state, c.opt.Now())
	if errors.Is(err, storage.ErrNotFound) {
		return Result{}, errBadState
	}
	if err != nil {
		return Result{}, err
	}
	refused := Result{Purpose: row.Purpose, Subject: row.Subject}
	if domains.Host(row.DomainOrigin) != domains.NormalHost(host) {
		return refused, errOtherDomain
	}
	raw, err := c.opt.Sealer.Open(requestSealPurpose(state), row.SealedData)
	if err != nil {
		return refused, fmt.Errorf("oauthclient: open request: %w", err)
	}
	var info indigooauth.AuthRequestData
	if err := json.Unmarshal(raw, &info); err != nil {
		return refused, fmt.Errorf("oauthclient: decode request: %w", err)
	}
	cfg, err := c.config(ctx, row.DomainOrigin, row.ClientID, info.Scopes)
	if err != nil {
		return refused, err
	}
	st := &callbackStore{client: c, info: info, purpose: row.Purpose, origin: row.DomainOrigin, clientID: row.ClientID}
	sess, err := c.app(cfg, st).ProcessCallback(ctx, params)
	if err != nil {
		var denied *indigooauth.AuthRequestCallbackError
		if errors.As(err, &denied) {
			return refused, fail.New(fail.Invalid, "the authorization was not granted: "+denied.ErrorCode)
		}
		return refused, fail.Wrap(fail.Invalid, "the sign-in could not be completed: "+err.Error(), err)
	}
	return Result{
		Purpose: row.Purpose, Subject: row.Subject, DID: sess.AccountDID, SessionID: sess.SessionID,
		Scopes: sess.Scopes, DomainOrigin: row.DomainOrigin,
	}, nil
}

// Session resumes a stored session: an indigo ClientSession that signs
// DPoP requests to the account's PDS, refreshes its tokens and stores them
// again, sealed. A caller that may refresh it (any request to the PDS may)
// should use WithSession instead, which keeps other users of the session
// out meanwhile.
func (c *Client) Session(ctx context.Context, did syntax.DID, sessionID string) (*indigooauth.ClientSession, error) {
	if c.opt.Sealer == nil {
		return nil, errOff
	}
	row, err := c.opt.Store.GetOAuthClientSession(ctx, did.String(), sessionID)
	if err != nil {
		return nil, err
	}
	data, err := c.openSession(row)
	if err != nil {
		return nil, err
	}
	cfg, err := c.config(ctx, row.DomainOrigin, row.ClientID, data.Scopes)
	if err != nil {
		return nil, err
	}
	st := &callbackStore{client: c, purpose: row.Purpose, origin: row.DomainOrigin, clientID: row.ClientID}
	return c.app(cfg, st).ResumeSession(ctx, did, sessionID)
}

// EndSession revokes a stored session at its authorization server (best
// effort) and deletes it.
func (c *Client) EndSession(ctx context.Context, did syntax.DID, sessionID string) error {
	sess, err := c.Session(ctx, did, sessionID)
	if err == nil && sess.Data.AuthServerRevocationEndpoint != "" {
		if rerr := sess.RevokeSession(ctx); rerr != nil {
			c.opt.Logger.WarnContext(ctx, "revoking an OAuth session failed", "did", did, "err", rerr)
		}
	}
	err = c.opt.Store.DeleteOAuthClientSession(ctx, did.String(), sessionID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	return err
}

// SweepRequests removes pending requests that expired.
func (c *Client) SweepRequests(ctx context.Context) (int64, error) {
	return c.opt.Store.DeleteExpiredOAuthAuthRequests(ctx, c.opt.Now())
}

func (c *Client) app(cfg *indigooauth.ClientConfig, st indigooauth.ClientAuthStore) *indigooauth.ClientApp {
	return &indigooauth.ClientApp{
		Client:   c.opt.HTTPClient,
		Resolver: &indigooauth.Resolver{Client: c.opt.HTTPClient, UserAgent: c.opt.UserAgent},
		Dir:      c.opt.Directory,
		Config:   cfg,
		Store:    st,
	}
}

func (c *Client) openSession(row storage.OAuthClientSession) (indigooauth.ClientSessionData, error) {
	var data indigooauth.ClientSessionData
	raw, err := c.opt.Sealer.Open(sessionSealPurpose(row.DID, row.SessionID), row.SealedData)
	if err != nil {
		return data, fmt.Errorf("oauthclient: open session: %w", err)
	}
	if err := json.Unmarshal(raw, &data); err != nil {
		return data, fmt.Errorf("oauthclient: decode session: %w", err)
	}
	return data, nil
}

func withAtproto(scopes []string) []string {
	for _, s := range scopes {
		if s == "atproto" {
			return scopes
		}
	}
	return append([]string{"atproto"}, scopes...)
}

// callbackOrigin is the origin of a callback URL.
func callbackOrigin(callbackURL string) string {
	u, err := url.Parse(callbackURL)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// Refresh refreshes a kept session's tokens at its authorization server
// and stores them again, sealed: a refused refresh (the session revoked,
// expired or unknown there) is an error.
func (c *Client) Refresh(ctx context.Context, did syntax.DID, sessionID string) error {
	return c.WithSession(ctx, did, sessionID, func(sess *indigooauth.ClientSession) error {
		if _, err := sess.RefreshTokens(ctx); err != nil {
			return fmt.Errorf("refresh the session of %s: %w", did, err)
		}
		return nil
	})
}
