package oauthclient

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/bluesky-social/indigo/atproto/atcrypto"
	indigooauth "github.com/bluesky-social/indigo/atproto/auth/oauth"

	"github.com/lexview/lexview/appview/internal/service/domains"
)

// config is the client configuration of the domain origin for scopes.
//
// A domain whose host is a loopback address (PUBLIC_URL on 127.0.0.1 or
// localhost) cannot publish metadata an authorization server could fetch,
// so it is an atproto development client: client_id
// http://localhost?redirect_uri=…&scope=…, its redirect URI on 127.0.0.1
// (never "localhost", which atproto refuses for redirects) at the
// domain's port, and public (no client assertion). Any other domain is a
// confidential client: client_id its /oauth-client-metadata.json, redirect
// URI its /oauth/callback, and assertions signed with the instance OAuth
// key (private_key_jwt).
//
// clientID, when not empty, is the client_id a pending request was made
// with (a development client's embeds the requested scopes).
func (c *Client) config(ctx context.Context, origin, clientID string, scopes []string) (*indigooauth.ClientConfig, error) {
	if domains.IsLoopback(origin) {
		cfg := indigooauth.NewLocalhostConfig(LoopbackCallback(origin), scopes)
		if clientID != "" {
			cfg.ClientID = clientID
		}
		cfg.UserAgent = c.opt.UserAgent
		return &cfg, nil
	}
	cfg := indigooauth.NewPublicConfig(domains.ClientID(origin), domains.RedirectURI(origin), scopes)
	cfg.UserAgent = c.opt.UserAgent
	key, err := c.opt.Key.Ensure(ctx)
	if err != nil {
		return nil, fmt.Errorf("oauthclient: instance key: %w", err)
	}
	priv, err := c.opt.PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("oauthclient: instance key: %w", err)
	}
	raw, err := priv.Bytes()
	if err != nil {
		return nil, fmt.Errorf("oauthclient: instance key: %w", err)
	}
	defer clear(raw)
	atKey, err := atcrypto.ParsePrivateBytesP256(raw)
	if err != nil {
		return nil, fmt.Errorf("oauthclient: instance key: %w", err)
	}
	if err := cfg.SetClientSecret(atKey, key.KID); err != nil {
		return nil, fmt.Errorf("oauthclient: instance key: %w", err)
	}
	return &cfg, nil
}

// LoopbackCallback is the redirect URI of the loopback domain origin: on
// 127.0.0.1 for a localhost name (an IP literal stays), at its port.
func LoopbackCallback(origin string) string {
	u, err := url.Parse(origin)
	if err != nil {
		return ""
	}
	host := u.Hostname()
	if h := strings.ToLower(host); h == "localhost" || strings.HasSuffix(h, ".localhost") {
		host = "127.0.0.1"
	}
	if port := u.Port(); port != "" {
		host = net.JoinHostPort(host, port)
	} else if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return "http://" + host + domains.CallbackPath
}
