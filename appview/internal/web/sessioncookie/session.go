// Package sessioncookie signs and verifies the dashboard's session cookie: a
// DID and an expiry, authenticated with HMAC-SHA256 under SESSION_SECRET.
package sessioncookie

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"
)

// CookieName is the session cookie's name.
const CookieName = "lexview_session"

// ErrInvalid is returned for a cookie that is malformed, forged or expired.
var ErrInvalid = errors.New("invalid session")

// Codec issues and reads session values.
type Codec struct {
	secret []byte
	now    func() time.Time
}

// NewCodec returns a codec keyed by secret. now may be nil.
func NewCodec(secret []byte, now func() time.Time) *Codec {
	if now == nil {
		now = time.Now
	}
	return &Codec{secret: secret, now: now}
}

type claims struct {
	DID string `json:"did"`
	Exp int64  `json:"exp"`
}

// Encode returns a signed session value for did, valid for ttl.
func (c *Codec) Encode(did syntax.DID, ttl time.Duration) string {
	body, _ := json.Marshal(claims{DID: did.String(), Exp: c.now().Add(ttl).Unix()})
	payload := base64.RawURLEncoding.EncodeToString(body)
	return payload + "." + base64.RawURLEncoding.EncodeToString(c.mac(payload))
}

// Decode verifies a session value and returns its DID.
func (c *Codec) Decode(value string) (syntax.DID, error) {
	payload, sig, ok := strings.Cut(value, ".")
	if !ok || len(value) > 2048 {
		return "", ErrInvalid
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, c.mac(payload)) {
		return "", ErrInvalid
	}
	body, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return "", ErrInvalid
	}
	var cl claims
	if json.Unmarshal(body, &cl) != nil || c.now().Unix() >= cl.Exp {
		return "", ErrInvalid
	}
	did, err := syntax.ParseDID(cl.DID)
	if err != nil {
		return "", ErrInvalid
	}
	return did, nil
}

// FromRequest reads and verifies the session cookie of r. It returns
// http.ErrNoCookie when there is none.
func (c *Codec) FromRequest(r *http.Request) (syntax.DID, error) {
	ck, err := r.Cookie(CookieName)
	if err != nil {
		return "", err
	}
	return c.Decode(ck.Value)
}

// Cookie builds the session cookie for did.
func (c *Codec) Cookie(did syntax.DID, ttl time.Duration, secure bool) *http.Cookie {
	return &http.Cookie{
		Name: CookieName, Value: c.Encode(did, ttl), Path: "/", MaxAge: int(ttl.Seconds()),
		HttpOnly: true, Secure: secure, SameSite: http.SameSiteLaxMode,
	}
}

func (c *Codec) mac(payload string) []byte {
	m := hmac.New(sha256.New, c.secret)
	m.Write([]byte(payload))
	return m.Sum(nil)
}
