package clientkeys

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
)

// Limits of the metadata fetch of POST .../auth-key/recheck.
const (
	metadataTimeout  = 10 * time.Second
	metadataMaxBytes = 256 << 10
)

// The values a client metadata document must carry for Lexview to act as
// the app's confidential client.
const (
	requiredAuthMethod = "private_key_jwt"
	requiredSigningAlg = oauth.SigningAlgorithm
)

// Checks reports each condition of confidential readiness.
type Checks struct {
	// AuthKey: the client holds a current authentication key.
	AuthKey bool `json:"auth_key"`
	// MetadataFetched: the client_id_url answered 200 with a JSON object
	// within the time and size limits.
	MetadataFetched bool `json:"metadata_fetched"`
	// ClientID: the document's client_id equals the client_id_url.
	ClientID bool `json:"client_id"`
	// TokenEndpointAuthMethod: it is private_key_jwt.
	TokenEndpointAuthMethod bool `json:"token_endpoint_auth_method"`
	// TokenEndpointAuthSigningAlg: it is ES256.
	TokenEndpointAuthSigningAlg bool `json:"token_endpoint_auth_signing_alg"`
	// JWKS: jwks_uri is Lexview's key set URL for the client, or the
	// inline jwks holds the current key.
	JWKS bool `json:"jwks"`
}

// Readiness says whether Lexview can act as the client's confidential
// OAuth client, and why not.
type Readiness struct {
	ConfidentialReady bool `json:"confidential_ready"`
	// Reason lists every failed check, separated by "; ".
	Reason  string `json:"reason,omitempty"`
	Checks  Checks `json:"checks"`
	JWKSURI string `json:"jwks_uri"`
	// KID is the current key, the one an inline jwks must hold.
	KID string `json:"kid,omitempty"`
}

// clientMetadata holds the fields of an OAuth client metadata document
// the recheck looks at.
type clientMetadata struct {
	ClientID                    string `json:"client_id"`
	TokenEndpointAuthMethod     string `json:"token_endpoint_auth_method"`
	TokenEndpointAuthSigningAlg string `json:"token_endpoint_auth_signing_alg"`
	JWKSURI                     string `json:"jwks_uri"`
	JWKS                        *struct {
		Keys []json.RawMessage `json:"keys"`
	} `json:"jwks"`
}

// Recheck fetches the client's published metadata document and reports
// whether Lexview can act as its confidential client. A document that
// fails the checks is a Readiness with the reasons, not an error.
func (s *Service) Recheck(ctx context.Context, clientID string) (Readiness, error) {
	c, err := s.client(ctx, clientID)
	if err != nil {
		return Readiness{}, err
	}
	out := Readiness{JWKSURI: s.JWKSURI(c.ID)}
	var reasons []string
	cur, err := s.opt.Store.GetCurrentClientAuthKey(ctx, c.ID)
	switch {
	case err == nil:
		out.Checks.AuthKey, out.KID = true, cur.KID
	case errors.Is(err, storage.ErrNotFound):
		reasons = append(reasons, errNoKey.Message)
	default:
		return Readiness{}, err
	}

	md, err := s.fetchMetadata(ctx, c.ClientIDURL)
	if err != nil {
		reasons = append(reasons, err.Error())
	} else {
		out.Checks.MetadataFetched = true
		reasons = append(reasons, checkMetadata(md, c.ClientIDURL, out.JWKSURI, cur, &out.Checks)...)
	}
	out.ConfidentialReady = len(reasons) == 0
	out.Reason = strings.Join(reasons, "; ")
	return out, nil
}

// checkMetadata fills the document checks and returns the reasons of the
// failed ones. cur is the current key (zero when there is none).
func checkMetadata(md clientMetadata, clientIDURL, jwksURI string, cur storage.ClientAuthKey, checks *Checks) []string {
	var reasons []string
	if checks.ClientID = md.ClientID == clientIDURL; !checks.ClientID {
		reasons = append(reasons, fmt.Sprintf("client_id in the metadata is %q, not the client_id_url %q", md.ClientID, clientIDURL))
	}
	if checks.TokenEndpointAuthMethod = md.TokenEndpointAuthMethod == requiredAuthMethod; !checks.TokenEndpointAuthMethod {
		reasons = append(reasons, fmt.Sprintf("token_endpoint_auth_method is %q, must be %q",
			md.TokenEndpointAuthMethod, requiredAuthMethod))
	}
	if checks.TokenEndpointAuthSigningAlg = md.TokenEndpointAuthSigningAlg == requiredSigningAlg; !checks.TokenEndpointAuthSigningAlg {
		reasons = append(reasons, fmt.Sprintf("token_endpoint_auth_signing_alg is %q, must be %q",
			md.TokenEndpointAuthSigningAlg, requiredSigningAlg))
	}
	checks.JWKS = md.JWKSURI == jwksURI || (cur.KID != "" && inlineHolds(md, cur))
	if !checks.JWKS {
		switch {
		case md.JWKSURI != "":
			reasons = append(reasons, fmt.Sprintf("jwks_uri is %q, must be %q", md.JWKSURI, jwksURI))
		case md.JWKS != nil && cur.KID != "":
			reasons = append(reasons, fmt.Sprintf("the inline jwks does not hold the current key %q; publish jwks_uri %q instead",
				cur.KID, jwksURI))
		default:
			reasons = append(reasons, fmt.Sprintf("jwks_uri must be %q", jwksURI))
		}
	}
	return reasons
}

// inlineHolds reports whether the document's inline jwks holds the key
// cur: same kid and same public point.
func inlineHolds(md clientMetadata, cur storage.ClientAuthKey) bool {
	if md.JWKS == nil {
		return false
	}
	want, err := PublicJWK(cur)
	if err != nil {
		return false
	}
	for _, raw := range md.JWKS.Keys {
		var j oauth.PublicJWK
		if json.Unmarshal(raw, &j) != nil {
			continue
		}
		if j.Kid == want.Kid && j.Kty == want.Kty && j.Crv == want.Crv && j.X == want.X && j.Y == want.Y {
			return true
		}
	}
	return false
}

// fetchMetadata GETs the client metadata document through the App's HTTP
// client, within metadataTimeout and metadataMaxBytes. Its errors are
// meant for the admin: they say what went wrong with the document.
func (s *Service) fetchMetadata(ctx context.Context, clientIDURL string) (clientMetadata, error) {
	var md clientMetadata
	ctx, cancel := context.WithTimeout(ctx, metadataTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientIDURL, nil)
	if err != nil {
		return md, fmt.Errorf("client_id_url %q is not a valid URL", clientIDURL)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.opt.HTTPClient.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return md, fmt.Errorf("client metadata could not be fetched: no answer within %s", metadataTimeout)
		}
		return md, fmt.Errorf("client metadata could not be fetched: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return md, fmt.Errorf("client metadata could not be fetched: HTTP status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, metadataMaxBytes+1))
	if err != nil {
		return md, fmt.Errorf("client metadata could not be read: %w", err)
	}
	if len(body) > metadataMaxBytes {
		return md, fmt.Errorf("client metadata exceeds %d KiB", metadataMaxBytes>>10)
	}
	if err := json.Unmarshal(body, &md); err != nil {
		return md, errors.New("client metadata is not a valid JSON client metadata document")
	}
	return md, nil
}
