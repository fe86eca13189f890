// Package serviceauth verifies atproto inter-service authentication JWTs:
// tokens an account signs with the #atproto key of its DID document.
package serviceauth

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bluesky-social/indigo/atproto/atcrypto"
	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"
)

// ErrInvalidToken is wrapped by every verification failure.
var ErrInvalidToken = errors.New("invalid service auth token")

// MaxTokenSize bounds the tokens Verify considers.
const MaxTokenSize = 8 << 10

// Verifier checks service-auth JWTs.
type Verifier struct {
	// Directory resolves issuer DIDs to their signing keys. Wrap it in a
	// cache: Verify purges an issuer once when its signature fails, so a
	// rotated key is picked up.
	Directory identity.Directory
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Audiences lists the accepted `aud` values: service DIDs, each also
	// accepted with a service fragment (did:web:example.com#bsky_appview).
	// AnyAudience accepts every token whatever its audience; an empty list
	// accepts none.
	Audiences []string
	// Self, when set, returns the service's own DID now (it follows the
	// configured identity); it is accepted like an entry of Audiences.
	Self func() string

	mu        sync.Mutex
	refreshed map[syntax.DID]time.Time // last forced refresh per issuer
}

// AnyAudience in Verifier.Audiences accepts tokens for any audience.
const AnyAudience = "*"

// acceptsAudience reports whether aud names this service.
func (v *Verifier) acceptsAudience(aud string) bool {
	if slices.Contains(v.Audiences, AnyAudience) {
		return true
	}
	did, fragment, hasFragment := strings.Cut(aud, "#")
	if aud == "" || hasFragment && fragment == "" {
		return false
	}
	return slices.Contains(v.Audiences, did) || v.Self != nil && did == v.Self() && did != ""
}

// Claims are the verified claims of a token.
type Claims struct {
	Issuer   syntax.DID
	Audience string
	Method   string // lxm, when present
	Expires  time.Time
}

type header struct {
	Alg string `json:"alg"`
	Typ string `json:"typ"`
}

type payload struct {
	Iss string          `json:"iss"`
	Aud json.RawMessage `json:"aud"`
	Exp json.RawMessage `json:"exp"`
	Lxm string          `json:"lxm"`
}

// refusedTypes are token types that are never service auth.
var refusedTypes = []string{"at+jwt", "refresh+jwt", "dpop+jwt"}

// tokenError is a refusal: its text says why, and is safe to show to the
// caller; the cause, when there is one, is for the logs only.
type tokenError struct {
	reason string
	cause  error
}

func (e *tokenError) Error() string   { return ErrInvalidToken.Error() + ": " + e.reason }
func (e *tokenError) Unwrap() []error { return []error{ErrInvalidToken, e.cause} }

// Cause returns what made a refusal happen beyond its stated reason (a
// resolution failure), for logging; nil when there is nothing more.
func Cause(err error) error {
	var te *tokenError
	if errors.As(err, &te) {
		return te.cause
	}
	return nil
}

func invalid(format string, args ...any) error {
	return &tokenError{reason: fmt.Sprintf(format, args...)}
}

// Parse decodes a token and checks everything but its signature: the
// algorithm (ES256 or ES256K), the type, the issuer, the audience and the
// expiry (a token at its exact expiry second is expired). It returns the
// claims, the signed input and the signature.
func (v *Verifier) Parse(token string) (Claims, []byte, []byte, error) {
	var c Claims
	if len(token) > MaxTokenSize {
		return c, nil, nil, invalid("token too large")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return c, nil, nil, invalid("not a JWS compact token")
	}
	var h header
	if err := decodeSegment(parts[0], &h); err != nil {
		return c, nil, nil, invalid("header: %v", err)
	}
	if h.Alg != "ES256" && h.Alg != "ES256K" {
		return c, nil, nil, invalid("unsupported alg %q", h.Alg)
	}
	typ := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(h.Typ)), "application/")
	if slices.Contains(refusedTypes, typ) {
		return c, nil, nil, invalid("token type %q is not service auth", h.Typ)
	}
	var p payload
	if err := decodeSegment(parts[1], &p); err != nil {
		return c, nil, nil, invalid("payload: %v", err)
	}
	iss, err := syntax.ParseDID(p.Iss)
	if err != nil {
		return c, nil, nil, invalid("iss is not a DID")
	}
	if len(p.Exp) == 0 || string(p.Exp) == "null" {
		return c, nil, nil, invalid("exp is required")
	}
	var expNum json.Number
	if p.Exp[0] == '"' || json.Unmarshal(p.Exp, &expNum) != nil {
		return c, nil, nil, invalid("exp is not a number")
	}
	expF, err := expNum.Float64()
	if err != nil || expF <= 0 || expF > 1<<40 {
		return c, nil, nil, invalid("exp is not a timestamp")
	}
	// Expiry is at the start of the exp second: a token at its exact
	// expiry second is already expired.
	exp := int64(expF)
	if v.now().Unix() >= exp {
		return c, nil, nil, invalid("token expired")
	}
	aud, err := audience(p.Aud)
	if err != nil {
		return c, nil, nil, invalid("aud: %v", err)
	}
	if !v.acceptsAudience(aud) {
		return c, nil, nil, invalid("audience %q is not this service", aud)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return c, nil, nil, invalid("malformed signature")
	}
	c = Claims{Issuer: iss, Audience: aud, Method: p.Lxm, Expires: time.Unix(exp, 0).UTC()}
	signed := []byte(parts[0] + "." + parts[1])
	return c, signed, sig, nil
}

// Verify checks a token completely and returns its claims. When the
// signature fails against a cached key, the issuer is purged from the
// directory and the check is made once more with a fresh DID document.
func (v *Verifier) Verify(ctx context.Context, token string) (Claims, error) {
	c, signed, sig, err := v.Parse(token)
	if err != nil {
		return Claims{}, err
	}
	alg := algOf(token)
	err = v.checkSignature(ctx, c.Issuer, alg, signed, sig)
	if errors.Is(err, errBadSignature) && v.mayRefresh(c.Issuer) {
		_ = v.Directory.Purge(ctx, c.Issuer.AtIdentifier())
		err = v.checkSignature(ctx, c.Issuer, alg, signed, sig)
	}
	if err != nil {
		return Claims{}, err
	}
	return c, nil
}

// refreshInterval is the least time between two forced DID document
// refreshes of one issuer, so forged tokens cannot hammer the directory.
const refreshInterval = 30 * time.Second

// mayRefresh reports whether the issuer's DID document may be refetched
// now, and if so records the refresh.
func (v *Verifier) mayRefresh(did syntax.DID) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	now := v.now()
	if last, ok := v.refreshed[did]; ok && now.Sub(last) < refreshInterval {
		return false
	}
	if v.refreshed == nil || len(v.refreshed) > 10_000 {
		v.refreshed = map[syntax.DID]time.Time{}
	}
	v.refreshed[did] = now
	return true
}

var errBadSignature = invalid("signature does not verify")

func (v *Verifier) checkSignature(ctx context.Context, did syntax.DID, alg string, signed, sig []byte) error {
	ident, err := v.Directory.LookupDID(ctx, did)
	if err != nil {
		return &tokenError{reason: "the issuer's DID document could not be resolved", cause: err}
	}
	key, err := ident.PublicKey()
	if err != nil {
		return invalid("issuer %s has no usable #atproto key", did)
	}
	switch key.(type) {
	case *atcrypto.PublicKeyP256:
		if alg != "ES256" {
			return errBadSignature
		}
	case *atcrypto.PublicKeyK256:
		if alg != "ES256K" {
			return errBadSignature
		}
	}
	if err := key.HashAndVerifyLenient(signed, sig); err != nil {
		return errBadSignature
	}
	return nil
}

func (v *Verifier) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

// algOf reads the alg of a token Parse accepted.
func algOf(token string) string {
	var h header
	_ = decodeSegment(token[:strings.IndexByte(token, '.')], &h)
	return h.Alg
}

func decodeSegment(seg string, dst any) error {
	raw, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return errors.New("not base64url")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(dst); err != nil {
		return errors.New("not a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// audience reads `aud`, a string or a one-element array.
func audience(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil && len(list) == 1 {
		return list[0], nil
	}
	return "", errors.New("must be a string")
}
