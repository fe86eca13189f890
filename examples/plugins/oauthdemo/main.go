//go:build wasip1

// Command oauthdemo is an example external-account plugin (auth_type
// oauth2): it signs a user in with an OAuth 2.0 provider (authorization
// code grant with a client secret), reads the account's profile and syncs
// the account's items into the user's atproto repository, one record per
// item, keyed by the item's id so a second sync replaces rather than
// duplicates. The provider's endpoints come from the manifest's config,
// the client credentials from the secrets client_id and client_secret.
//
// Provider API it expects: GET {api_url}/me → {id, name}; GET
// {api_url}/items?since=<cursor> → {items: [{id, text, created_at,
// collection?}], cursor}; a 401 means the access token expired.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unsafe"

	"github.com/lexview/lexview/examples/plugins/pdk"
)

func main() {}

// config is the manifest's config.
type config struct {
	AuthorizeURL string `json:"authorize_url"`
	TokenURL     string `json:"token_url"`
	APIURL       string `json:"api_url"`
	Scope        string `json:"scope"`
	Collection   string `json:"collection"`
}

func loadConfig() (config, error) {
	var c config
	if err := pdk.Config(&c); err != nil {
		return c, err
	}
	if c.AuthorizeURL == "" || c.TokenURL == "" || c.APIURL == "" || c.Collection == "" {
		return c, errors.New("config needs authorize_url, token_url, api_url and collection")
	}
	return c, nil
}

func clientCredentials() (string, string, error) {
	id, ok1 := pdk.Secret("client_id")
	secret, ok2 := pdk.Secret("client_secret")
	if !ok1 || !ok2 {
		return "", "", errors.New("the client_id and client_secret secrets are not set")
	}
	return id, secret, nil
}

// tokens is what Lexview stores, sealed, and hands back.
type tokens struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token,omitempty"`
	ExpiresAt    int64  `json:"expires_at,omitempty"` // Unix ms, read by Lexview
}

//go:wasmexport lv_auth_authorize
func authorize(ptr unsafe.Pointer, n int32) int64 {
	return pdk.Export(ptr, n, func(in []byte) (any, error) {
		var req struct {
			State       string `json:"state"`
			RedirectURI string `json:"redirect_uri"`
		}
		if err := json.Unmarshal(in, &req); err != nil {
			return nil, err
		}
		c, err := loadConfig()
		if err != nil {
			return nil, err
		}
		id, _, err := clientCredentials()
		if err != nil {
			return nil, err
		}
		q := url.Values{"response_type": {"code"}, "client_id": {id}, "redirect_uri": {req.RedirectURI}, "state": {req.State}}
		if c.Scope != "" {
			q.Set("scope", c.Scope)
		}
		sep := "?"
		if strings.Contains(c.AuthorizeURL, "?") {
			sep = "&"
		}
		return map[string]string{"url": c.AuthorizeURL + sep + q.Encode()}, nil
	})
}

//go:wasmexport lv_auth_exchange
func exchange(ptr unsafe.Pointer, n int32) int64 {
	return pdk.Export(ptr, n, func(in []byte) (any, error) {
		var req struct {
			RedirectURI string            `json:"redirect_uri"`
			Params      map[string]string `json:"params"`
		}
		if err := json.Unmarshal(in, &req); err != nil {
			return nil, err
		}
		if req.Params["code"] == "" {
			return nil, errors.New("the callback has no code")
		}
		return tokenRequest(url.Values{"grant_type": {"authorization_code"}, "code": {req.Params["code"]},
			"redirect_uri": {req.RedirectURI}}, "")
	})
}

//go:wasmexport lv_auth_refresh
func refresh(ptr unsafe.Pointer, n int32) int64 {
	return pdk.Export(ptr, n, func(in []byte) (any, error) {
		var req struct {
			Tokens tokens `json:"tokens"`
		}
		if err := json.Unmarshal(in, &req); err != nil {
			return nil, err
		}
		if req.Tokens.RefreshToken == "" {
			return nil, errors.New("no refresh token")
		}
		return tokenRequest(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {req.Tokens.RefreshToken}},
			req.Tokens.RefreshToken)
	})
}

// tokenRequest posts form to the token endpoint with the client
// credentials; keep is the refresh token kept when the answer has none.
func tokenRequest(form url.Values, keep string) (tokens, error) {
	c, err := loadConfig()
	if err != nil {
		return tokens{}, err
	}
	id, secret, err := clientCredentials()
	if err != nil {
		return tokens{}, err
	}
	form.Set("client_id", id)
	form.Set("client_secret", secret)
	res, err := pdk.HTTP(pdk.Request{Method: "POST", URL: c.TokenURL, Body: form.Encode(),
		Headers: map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}})
	if err != nil {
		return tokens{}, err
	}
	if res.Status != 200 {
		// Never quote the body: it may echo credentials.
		return tokens{}, fmt.Errorf("the token endpoint answered %d", res.Status)
	}
	var t struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
		ExpiresIn    int64  `json:"expires_in"`
	}
	if err := json.Unmarshal([]byte(res.Body), &t); err != nil || t.AccessToken == "" {
		return tokens{}, errors.New("the token endpoint answered without an access token")
	}
	out := tokens{AccessToken: t.AccessToken, RefreshToken: t.RefreshToken}
	if out.RefreshToken == "" {
		out.RefreshToken = keep
	}
	if t.ExpiresIn > 0 {
		out.ExpiresAt = pdk.NowMs() + t.ExpiresIn*1000
	}
	return out, nil
}

// apiGet reads path of the provider's API with the access token; ok is
// false when the token was refused (401).
func apiGet(t tokens, path string, dst any) (bool, error) {
	c, err := loadConfig()
	if err != nil {
		return false, err
	}
	res, err := pdk.HTTP(pdk.Request{URL: strings.TrimRight(c.APIURL, "/") + path,
		Headers: map[string]string{"Authorization": "Bearer " + t.AccessToken, "Accept": "application/json"}})
	if err != nil {
		return false, err
	}
	if res.Status == 401 {
		return false, nil
	}
	if res.Status != 200 {
		return false, fmt.Errorf("the provider answered %d to %s", res.Status, path)
	}
	return true, json.Unmarshal([]byte(res.Body), dst)
}

//go:wasmexport lv_auth_profile
func profile(ptr unsafe.Pointer, n int32) int64 {
	return pdk.Export(ptr, n, func(in []byte) (any, error) {
		var req struct {
			Tokens tokens `json:"tokens"`
		}
		if err := json.Unmarshal(in, &req); err != nil {
			return nil, err
		}
		var me struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		}
		ok, err := apiGet(req.Tokens, "/me", &me)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, errors.New("the provider refused the access token")
		}
		return me, nil
	})
}

// record is one record to sync.
type record struct {
	Collection string          `json:"collection"`
	RKey       string          `json:"rkey,omitempty"`
	Record     json.RawMessage `json:"record"`
}

type syncAnswer struct {
	Records      []record `json:"records"`
	Cursor       string   `json:"cursor,omitempty"`
	NeedsRefresh bool     `json:"needs_refresh,omitempty"`
}

//go:wasmexport lv_auth_sync
func syncItems(ptr unsafe.Pointer, n int32) int64 {
	return pdk.Export(ptr, n, func(in []byte) (any, error) {
		var req struct {
			Tokens tokens `json:"tokens"`
			Cursor string `json:"cursor"`
		}
		if err := json.Unmarshal(in, &req); err != nil {
			return nil, err
		}
		c, err := loadConfig()
		if err != nil {
			return nil, err
		}
		var page struct {
			Items []struct {
				ID         string `json:"id"`
				Text       string `json:"text"`
				CreatedAt  string `json:"created_at"`
				Collection string `json:"collection"`
			} `json:"items"`
			Cursor string `json:"cursor"`
		}
		ok, err := apiGet(req.Tokens, "/items?since="+url.QueryEscape(req.Cursor), &page)
		if err != nil {
			return nil, err
		}
		if !ok {
			return syncAnswer{NeedsRefresh: true}, nil
		}
		out := syncAnswer{Records: []record{}, Cursor: page.Cursor}
		for _, it := range page.Items {
			col := c.Collection
			if it.Collection != "" {
				col = it.Collection
			}
			rec, _ := json.Marshal(struct {
				Text      string `json:"text"`
				SourceID  string `json:"sourceId"`
				CreatedAt string `json:"createdAt,omitempty"`
			}{it.Text, it.ID, it.CreatedAt})
			out.Records = append(out.Records, record{Collection: col, RKey: it.ID, Record: rec})
		}
		if out.Cursor == "" {
			out.Cursor = req.Cursor
		}
		return out, nil
	})
}
