package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// maxResourceMetadata bounds a protected-resource metadata document and a
// getSession answer.
const maxResourceMetadata = 64 << 10

// ErrTokenRefused is returned by SessionDID when the PDS does not accept
// the session's access token (or its DPoP binding).
var ErrTokenRefused = errors.New("oauth: the PDS refused the access token")

// AuthorizationServers returns the issuers of the authorization servers
// that the PDS at pdsURL names in its protected-resource metadata (RFC
// 9728, /.well-known/oauth-protected-resource). The metadata's resource
// must be the PDS itself.
func (c *Client) AuthorizationServers(ctx context.Context, pdsURL string) ([]string, error) {
	origin, err := originOf(pdsURL)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, origin+"/.well-known/oauth-protected-resource", nil)
	if err != nil {
		return nil, fmt.Errorf("oauth: build resource metadata request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	c.userAgent(req)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("oauth: fetch resource metadata of %s: %w", origin, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("oauth: resource metadata of %s: status %d", origin, resp.StatusCode)
	}
	var m struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxResourceMetadata)).Decode(&m); err != nil {
		return nil, fmt.Errorf("oauth: resource metadata of %s: %w", origin, err)
	}
	if res, err := originOf(m.Resource); err != nil || res != origin {
		return nil, fmt.Errorf("oauth: resource metadata of %s names resource %q", origin, m.Resource)
	}
	return m.AuthorizationServers, nil
}

// SessionDID proves s's tokens before anything relies on them: it calls
// com.atproto.server.getSession at s.PDSURL with s's access token and a
// DPoP proof made with s.DPoPKey (answering one nonce challenge; it never
// refreshes) and returns the DID the PDS says the token belongs to. It
// returns an error wrapping ErrTokenRefused when the PDS refuses the token
// or its binding to the key.
func (c *Client) SessionDID(ctx context.Context, s *UserSession) (string, error) {
	out := outbound{method: http.MethodGet, path: preflightPath, length: -1}
	target := strings.TrimSuffix(s.PDSURL, "/") + out.path
	origin, err := originOf(target)
	if err != nil {
		return "", err
	}
	for retried := false; ; retried = true {
		resp, err := c.attempt(ctx, s, out, target, origin)
		if err != nil {
			return "", err
		}
		kind := classify(resp)
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxResourceMetadata))
		resp.Body.Close()
		if err != nil {
			return "", fmt.Errorf("oauth: read getSession answer: %w", err)
		}
		switch {
		case resp.StatusCode == http.StatusOK:
			var who struct {
				DID string `json:"did"`
			}
			if err := json.Unmarshal(body, &who); err != nil || who.DID == "" {
				return "", fmt.Errorf("oauth: getSession answer of %s names no did", origin)
			}
			return who.DID, nil
		case kind == challengeNonce && !retried && resp.Header.Get("DPoP-Nonce") != "":
			continue
		case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden || kind != challengeNone:
			return "", fmt.Errorf("%w (status %d)", ErrTokenRefused, resp.StatusCode)
		default:
			return "", fmt.Errorf("oauth: getSession at %s: status %d", origin, resp.StatusCode)
		}
	}
}

func (c *Client) userAgent(req *http.Request) {
	if c.opts.UserAgent != "" {
		req.Header.Set("User-Agent", c.opts.UserAgent)
	}
}
