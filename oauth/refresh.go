package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// maxTokenResponse bounds token and metadata responses.
const maxTokenResponse = 1 << 20

// maxExpiresIn is the longest expires_in accepted, in seconds (a year).
const maxExpiresIn = 365 * 24 * 3600

// RefreshError is an authorization server's refusal of a token request: an
// OAuth error response. Code "invalid_grant" means the refresh token is no
// longer valid and the user must sign in again.
type RefreshError struct {
	Status      int
	Code        string // OAuth "error"
	Description string // OAuth "error_description"
}

func (e *RefreshError) Error() string {
	if e.Description != "" {
		return fmt.Sprintf("oauth: token refresh refused (%d %s: %s)", e.Status, e.Code, e.Description)
	}
	return fmt.Sprintf("oauth: token refresh refused (%d %s)", e.Status, e.Code)
}

// ServerMetadata is the part of an authorization server's metadata
// (RFC 8414) the Client uses.
type ServerMetadata struct {
	Issuer                        string   `json:"issuer"`
	TokenEndpoint                 string   `json:"token_endpoint"`
	DPoPSigningAlgValuesSupported []string `json:"dpop_signing_alg_values_supported"`
}

// Refresh refreshes s's tokens at its issuer and returns the session to
// use from now on. Refreshes of one session are single-flight: concurrent
// callers share one token request. When the session has already moved
// past s (another request or instance refreshed it), no token request is
// made and the newer session is returned. Refresh runs detached from ctx
// (a refresh token rotated at the server must be stored), bounded by
// RefreshTimeout; ctx only bounds the wait.
func (c *Client) Refresh(ctx context.Context, s *UserSession) (*UserSession, error) {
	return c.refresh(ctx, s)
}

// flight is one refresh in progress, shared by the requests waiting for it.
type flight struct {
	done chan struct{}
	sess *UserSession
	err  error
}

func (c *Client) refresh(ctx context.Context, stale *UserSession) (*UserSession, error) {
	c.flightMu.Lock()
	f, ok := c.flights[stale.ID]
	if !ok {
		f = &flight{done: make(chan struct{})}
		c.flights[stale.ID] = f
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.RefreshTimeout)
		go func() {
			defer cancel()
			f.sess, f.err = c.runRefresh(fctx, stale)
			c.flightMu.Lock()
			delete(c.flights, stale.ID)
			c.flightMu.Unlock()
			close(f.done)
		}()
	}
	c.flightMu.Unlock()
	select {
	case <-f.done:
		return f.sess, f.err
	case <-ctx.Done():
		return nil, fmt.Errorf("oauth: waiting for token refresh: %w", ctx.Err())
	}
}

// refreshIfExpiring refreshes sess when its access token expires within
// RefreshSkew. When that refresh fails but the token has not expired yet,
// the token is used as it is: the PDS has the last word.
func (c *Client) refreshIfExpiring(ctx context.Context, sess *UserSession) (*UserSession, error) {
	now := c.now()
	if sess.ExpiresAt.IsZero() || now.Add(c.opts.RefreshSkew).Before(sess.ExpiresAt) {
		return sess, nil
	}
	fresh, err := c.refresh(ctx, sess)
	if err != nil && ctx.Err() == nil && now.Before(sess.ExpiresAt) {
		return sess, nil
	}
	return fresh, err
}

// runRefresh is the body of a flight.
func (c *Client) runRefresh(ctx context.Context, stale *UserSession) (*UserSession, error) {
	cur, err := c.sessions.Load(ctx, stale.ID)
	if err != nil {
		return nil, fmt.Errorf("oauth: reload session: %w", err)
	}
	if cur.Version != stale.Version || cur.AccessToken != stale.AccessToken {
		return cur, nil // refreshed elsewhere in the meantime
	}
	tokens, err := c.requestTokens(ctx, cur)
	if err != nil {
		var re *RefreshError
		if errors.As(err, &re) && re.Code == "invalid_grant" {
			// Another instance may have used the refresh token first and
			// not yet saved (or just saved) its result.
			if winner, lerr := c.sessions.Load(ctx, stale.ID); lerr == nil && winner.Version != cur.Version {
				return winner, nil
			}
		}
		return nil, err
	}
	saved, err := c.saveTokens(ctx, cur, tokens)
	if errors.Is(err, ErrSessionStale) {
		winner, lerr := c.sessions.Load(ctx, stale.ID)
		if lerr != nil {
			return nil, fmt.Errorf("oauth: reload session after a concurrent refresh: %w", lerr)
		}
		return winner, nil
	}
	return saved, err
}

// saveTokens stores refreshed tokens, retrying briefly on failures other
// than ErrSessionStale: the old refresh token is already spent, so losing
// the new one would sign the user out.
func (c *Client) saveTokens(ctx context.Context, s *UserSession, t Tokens) (*UserSession, error) {
	var err error
	for i, wait := 0, 100*time.Millisecond; i < 3; i, wait = i+1, wait*2 {
		var saved *UserSession
		saved, err = c.sessions.SaveTokens(ctx, s, t)
		if err == nil {
			return saved, nil
		}
		if errors.Is(err, ErrSessionStale) || i == 2 {
			break
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, fmt.Errorf("oauth: save refreshed tokens: %w", err)
		}
	}
	return nil, fmt.Errorf("oauth: save refreshed tokens: %w", err)
}

// requestTokens runs a refresh_token grant at s's issuer, with a DPoP
// proof and one retry when the server demands a new nonce.
func (c *Client) requestTokens(ctx context.Context, s *UserSession) (Tokens, error) {
	if s.RefreshToken == "" {
		return Tokens{}, &RefreshError{Code: "invalid_grant", Description: "session has no refresh token"}
	}
	meta, err := c.Metadata(ctx, s.Issuer)
	if err != nil {
		return Tokens{}, err
	}
	origin, err := originOf(meta.TokenEndpoint)
	if err != nil {
		return Tokens{}, err
	}
	signer, err := NewSigner(s.DPoPKey, c.now)
	if err != nil {
		return Tokens{}, err
	}
	for attempt := 0; ; attempt++ {
		form := url.Values{
			"grant_type":    {"refresh_token"},
			"refresh_token": {s.RefreshToken},
			"client_id":     {s.ClientID},
		}
		if s.ClientAssertion != nil {
			a, err := s.ClientAssertion(ctx, s.Issuer)
			if err != nil {
				return Tokens{}, fmt.Errorf("oauth: client assertion: %w", err)
			}
			form.Set("client_assertion_type", ClientAssertionType)
			form.Set("client_assertion", a)
		}
		nonce, _ := c.nonces.get(origin, c.now(), 0)
		proof, err := signer.NewProof(http.MethodPost, meta.TokenEndpoint, "", nonce)
		if err != nil {
			return Tokens{}, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, meta.TokenEndpoint, strings.NewReader(form.Encode()))
		if err != nil {
			return Tokens{}, fmt.Errorf("oauth: build token request: %w", err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "application/json")
		req.Header.Set("DPoP", proof)
		if c.opts.UserAgent != "" {
			req.Header.Set("User-Agent", c.opts.UserAgent)
		}
		resp, err := c.http.Do(req)
		if err != nil {
			return Tokens{}, fmt.Errorf("oauth: token request: %w", err)
		}
		c.nonces.put(origin, resp.Header.Get("DPoP-Nonce"), c.now())
		kind := classify(resp)
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenResponse))
		resp.Body.Close()
		if err != nil {
			return Tokens{}, fmt.Errorf("oauth: read token response: %w", err)
		}
		if resp.StatusCode == http.StatusOK {
			return c.parseTokens(s, body)
		}
		if kind == challengeNonce && attempt == 0 && resp.Header.Get("DPoP-Nonce") != "" {
			continue
		}
		var oe struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		_ = json.Unmarshal(body, &oe)
		if oe.Error == "" {
			oe.Error = "server_error"
		}
		return Tokens{}, &RefreshError{Status: resp.StatusCode, Code: oe.Error, Description: oe.Description}
	}
}

// parseTokens checks a token response for s.
func (c *Client) parseTokens(s *UserSession, body []byte) (Tokens, error) {
	var tr struct {
		AccessToken  string      `json:"access_token"`
		RefreshToken string      `json:"refresh_token"`
		TokenType    string      `json:"token_type"`
		ExpiresIn    json.Number `json:"expires_in"`
		Scope        *string     `json:"scope"`
		Sub          string      `json:"sub"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&tr); err != nil {
		return Tokens{}, fmt.Errorf("oauth: token response: %w", err)
	}
	if tr.AccessToken == "" {
		return Tokens{}, errors.New("oauth: token response has no access_token")
	}
	if !strings.EqualFold(tr.TokenType, "DPoP") {
		return Tokens{}, fmt.Errorf("oauth: token response has token_type %q, want DPoP", tr.TokenType)
	}
	if tr.Sub != s.DID {
		return Tokens{}, fmt.Errorf("oauth: token response is for %q, not the session's %q", tr.Sub, s.DID)
	}
	t := Tokens{AccessToken: tr.AccessToken, RefreshToken: tr.RefreshToken, Scopes: s.Scopes}
	if t.RefreshToken == "" {
		t.RefreshToken = s.RefreshToken // the server did not rotate it
	}
	if tr.Scope != nil {
		if !slices.Contains(strings.Fields(*tr.Scope), "atproto") {
			return Tokens{}, fmt.Errorf("oauth: refreshed scope %q lacks atproto", *tr.Scope)
		}
		t.Scopes = *tr.Scope
	}
	if tr.ExpiresIn != "" {
		secs, err := tr.ExpiresIn.Float64()
		if err != nil || !(secs > 0 && secs <= maxExpiresIn) {
			return Tokens{}, fmt.Errorf("oauth: token response has an invalid expires_in %q", tr.ExpiresIn)
		}
		t.ExpiresAt = c.now().Add(time.Duration(secs * float64(time.Second)))
	}
	return t, nil
}

// metadataCache holds authorization-server metadata per issuer.
type metadataCache struct {
	mu sync.Mutex
	m  map[string]cachedMetadata
}

type cachedMetadata struct {
	meta    ServerMetadata
	fetched time.Time
}

func newMetadataCache() *metadataCache { return &metadataCache{m: make(map[string]cachedMetadata)} }

// Metadata returns the authorization-server metadata of issuer from
// {issuer}/.well-known/oauth-authorization-server, cached for MetadataTTL.
// The document must name the same issuer and a token endpoint, and accept
// ES256 DPoP proofs if it lists algorithms.
func (c *Client) Metadata(ctx context.Context, issuer string) (ServerMetadata, error) {
	now := c.now()
	c.meta.mu.Lock()
	e, ok := c.meta.m[issuer]
	c.meta.mu.Unlock()
	if ok && now.Sub(e.fetched) < c.opts.MetadataTTL {
		return e.meta, nil
	}
	if _, err := originOf(issuer); err != nil {
		return ServerMetadata{}, fmt.Errorf("oauth: issuer: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		strings.TrimSuffix(issuer, "/")+"/.well-known/oauth-authorization-server", nil)
	if err != nil {
		return ServerMetadata{}, fmt.Errorf("oauth: build metadata request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	c.userAgent(req)
	resp, err := c.http.Do(req)
	if err != nil {
		return ServerMetadata{}, fmt.Errorf("oauth: fetch metadata of %s: %w", issuer, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return ServerMetadata{}, fmt.Errorf("oauth: metadata of %s: status %d", issuer, resp.StatusCode)
	}
	var m ServerMetadata
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxTokenResponse)).Decode(&m); err != nil {
		return ServerMetadata{}, fmt.Errorf("oauth: metadata of %s: %w", issuer, err)
	}
	if m.Issuer != issuer {
		return ServerMetadata{}, fmt.Errorf("oauth: metadata of %s names issuer %q", issuer, m.Issuer)
	}
	if _, err := originOf(m.TokenEndpoint); err != nil {
		return ServerMetadata{}, fmt.Errorf("oauth: metadata of %s: token_endpoint: %w", issuer, err)
	}
	if m.DPoPSigningAlgValuesSupported != nil && !slices.Contains(m.DPoPSigningAlgValuesSupported, SigningAlgorithm) {
		return ServerMetadata{}, fmt.Errorf("oauth: %s does not accept ES256 DPoP proofs", issuer)
	}
	c.meta.mu.Lock()
	c.meta.m[issuer] = cachedMetadata{meta: m, fetched: now}
	c.meta.mu.Unlock()
	return m, nil
}

// challenge is what a refused response asks of the client.
type challenge int

const (
	challengeNone  challenge = iota
	challengeNonce           // use_dpop_nonce: retry with the DPoP-Nonce given
	challengeToken           // the access token expired or is invalid: refresh
)

// classify reads what a 400 or 401 response asks for, from its
// WWW-Authenticate DPoP challenge and its JSON error. It peeks at the body
// and puts it back, so the response stays unchanged for the caller.
func classify(resp *http.Response) challenge {
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusBadRequest {
		return challengeNone
	}
	for _, h := range resp.Header.Values("WWW-Authenticate") {
		switch dpopChallengeError(h) {
		case "use_dpop_nonce":
			return challengeNonce
		case "invalid_token":
			if resp.StatusCode == http.StatusUnauthorized {
				return challengeToken
			}
		}
	}
	peek, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorPeek))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(peek), resp.Body), resp.Body}
	if err != nil {
		return challengeNone
	}
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(peek, &e) != nil {
		return challengeNone
	}
	switch e.Error {
	case "use_dpop_nonce":
		return challengeNonce
	case "ExpiredToken", "InvalidToken", "invalid_token":
		if resp.StatusCode == http.StatusUnauthorized {
			return challengeToken
		}
	}
	return challengeNone
}

// dpopChallengeError returns the error parameter of the DPoP challenge in
// a WWW-Authenticate header value ("" when there is none). A value may
// hold several challenges: `Bearer realm="x", DPoP error="use_dpop_nonce"`.
func dpopChallengeError(h string) string {
	inDPoP := false
	for s := strings.TrimSpace(h); s != ""; {
		name, rest := cutToken(s)
		if name == "" {
			return "" // malformed
		}
		rest = strings.TrimLeft(rest, " \t")
		if !strings.HasPrefix(rest, "=") {
			// A scheme name starts a new challenge.
			inDPoP = strings.EqualFold(name, "DPoP")
			s = strings.TrimLeft(rest, " \t,")
			continue
		}
		rest = strings.TrimLeft(rest[1:], " \t")
		var value string
		if strings.HasPrefix(rest, `"`) {
			value, rest = cutQuoted(rest)
		} else {
			value, rest = cutToken(rest)
		}
		if inDPoP && strings.EqualFold(name, "error") {
			return value
		}
		s = strings.TrimLeft(rest, " \t,")
	}
	return ""
}

// cutToken splits off a leading RFC 9110 token (or token68 characters).
func cutToken(s string) (string, string) {
	i := strings.IndexFunc(s, func(r rune) bool {
		return r == ' ' || r == '\t' || r == ',' || r == '=' || r == '"'
	})
	if i < 0 {
		return s, ""
	}
	return s[:i], s[i:]
}

// cutQuoted splits off a leading quoted-string and unescapes it.
func cutQuoted(s string) (string, string) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			}
		case '"':
			return b.String(), s[i+1:]
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), ""
}
