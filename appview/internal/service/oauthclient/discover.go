package oauthclient

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	indigooauth "github.com/bluesky-social/indigo/atproto/auth/oauth"
)

// maxMetadata bounds a metadata document.
const maxMetadata = 256 << 10

// discover finds the authorization server of the PDS pds and returns its
// metadata: the PDS's protected-resource metadata names the issuer, whose
// authorization-server metadata is checked as indigo checks it. With
// AllowHTTP, http servers and ports are accepted (development); the
// issuer must still be the server the document was fetched from.
func (c *Client) discover(ctx context.Context, pds string) (*indigooauth.AuthServerMetadata, error) {
	if err := c.checkServerURL(pds); err != nil {
		return nil, err
	}
	var res indigooauth.ProtectedResourceMetadata
	if err := c.getJSON(ctx, strings.TrimRight(pds, "/")+"/.well-known/oauth-protected-resource", &res); err != nil {
		return nil, err
	}
	if len(res.AuthorizationServers) == 0 {
		return nil, fmt.Errorf("no authorization server in the protected-resource metadata of %s", pds)
	}
	issuer := strings.TrimRight(res.AuthorizationServers[0], "/")
	if err := c.checkServerURL(issuer); err != nil {
		return nil, err
	}
	var meta indigooauth.AuthServerMetadata
	if err := c.getJSON(ctx, issuer+"/.well-known/oauth-authorization-server", &meta); err != nil {
		return nil, err
	}
	if strings.HasPrefix(issuer, "https://") && !hasPort(issuer) {
		if err := meta.Validate(issuer); err != nil {
			return nil, err
		}
		return &meta, nil
	}
	// A development server: indigo's validation insists on https.
	if strings.TrimRight(meta.Issuer, "/") != issuer {
		return nil, fmt.Errorf("authorization server metadata: issuer %q is not %q", meta.Issuer, issuer)
	}
	if meta.AuthorizationEndpoint == "" || meta.TokenEndpoint == "" || meta.PushedAuthorizationRequestEndpoint == "" {
		return nil, fmt.Errorf("authorization server metadata of %s lacks an endpoint", issuer)
	}
	return &meta, nil
}

// checkServerURL accepts https URLs on the default port, and, with
// AllowHTTP, http and ports too.
func (c *Client) checkServerURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("invalid server URL %q", raw)
	}
	if c.opt.AllowHTTP && (u.Scheme == "http" || u.Scheme == "https") {
		return nil
	}
	if u.Scheme != "https" || u.Port() != "" {
		return fmt.Errorf("not a public https server URL: %s", raw)
	}
	return nil
}

func hasPort(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Port() != ""
}

func (c *Client) getJSON(ctx context.Context, rawURL string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if c.opt.UserAgent != "" {
		req.Header.Set("User-Agent", c.opt.UserAgent)
	}
	resp, err := c.opt.HTTPClient.Do(req)
	if err != nil {
		return fmt.Errorf("fetch %s: %w", rawURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetch %s: HTTP %d", rawURL, resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxMetadata)).Decode(into); err != nil {
		return fmt.Errorf("decode %s: %w", rawURL, err)
	}
	return nil
}
