package oauth

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// DPoP proof rules (RFC 9449) as Lexview applies them.
const (
	// ProofType is the required "typ" header of a DPoP proof.
	ProofType = "dpop+jwt"
	// ProofWindow is how far a proof's iat may lie from the server clock,
	// in either direction.
	ProofWindow = 5 * time.Minute
	// MaxProofSize bounds the length of a proof accepted for parsing.
	MaxProofSize = 8 << 10
)

// ErrInvalidProof matches (with errors.Is) every error about a DPoP proof
// returned by ParseProof and Verifier.Verify. The more specific errors
// below say why; all of them mean HTTP 401 to a caller.
var ErrInvalidProof = errors.New("oauth: invalid DPoP proof")

// proofError is a specific reason a proof was refused. It matches itself
// and ErrInvalidProof.
type proofError struct{ msg string }

func (e *proofError) Error() string        { return e.msg }
func (e *proofError) Is(target error) bool { return target == ErrInvalidProof }

// The reasons a DPoP proof is refused.
var (
	ErrMalformedProof   error = &proofError{"dpop: malformed proof"}
	ErrProofType        error = &proofError{"dpop: typ header is not dpop+jwt"}
	ErrProofAlgorithm   error = &proofError{"dpop: alg is not ES256"}
	ErrProofKey         error = &proofError{"dpop: jwk header is missing or not a public EC P-256 key"}
	ErrProofSignature   error = &proofError{"dpop: signature does not verify"}
	ErrWrongMethod      error = &proofError{"dpop: htm does not match the request method"}
	ErrWrongURL         error = &proofError{"dpop: htu does not match the request URL"}
	ErrExpiredProof     error = &proofError{"dpop: iat is older than the accepted window"}
	ErrProofNotYetValid error = &proofError{"dpop: iat is further in the future than the accepted window"}
	ErrBadATH           error = &proofError{"dpop: ath is missing or does not match the access token"}
	ErrMissingJTI       error = &proofError{"dpop: jti is missing"}
	ErrReplay           error = &proofError{"dpop: jti was already used"}
)

// Proof is a DPoP proof whose signature has been verified.
type Proof struct {
	// JKT is the RFC 7638 SHA-256 thumbprint of the proof's key, base64url
	// without padding: the key's identity for session binding.
	JKT string
	// Key is the public key that signed the proof.
	Key *ecdsa.PublicKey
	// JTI is the proof's unique identifier.
	JTI string
	// IAT is when the proof claims it was made (second precision).
	IAT time.Time
	// HTM and HTU are the method and URL the proof is for.
	HTM string
	HTU string
	// ATH is the access-token hash claim; "" when absent.
	ATH string
	// Nonce is the server-provided nonce claim; "" when absent.
	Nonce string
}

// proofHeader is the part of the protected header checked before go-jose
// parses the proof, to give precise errors.
type proofHeader struct {
	Typ string                     `json:"typ"`
	Alg string                     `json:"alg"`
	JWK map[string]json.RawMessage `json:"jwk"`
}

type proofClaims struct {
	JTI   string      `json:"jti"`
	HTM   string      `json:"htm"`
	HTU   string      `json:"htu"`
	IAT   json.Number `json:"iat"`
	ATH   string      `json:"ath"`
	Nonce string      `json:"nonce"`
}

// ParseProof checks a DPoP proof's form and signature: compact JWS,
// typ "dpop+jwt", alg ES256, an embedded public EC P-256 jwk with no
// private members, a valid signature by that key, and a jti and iat
// present. It does not check the method, URL, time, access token or replay;
// Verifier.Verify does.
func ParseProof(proof string) (Proof, error) {
	if len(proof) == 0 || len(proof) > MaxProofSize {
		return Proof{}, fmt.Errorf("%w: empty or longer than %d bytes", ErrMalformedProof, MaxProofSize)
	}
	headSeg, _, ok := strings.Cut(proof, ".")
	if !ok || strings.Count(proof, ".") != 2 {
		return Proof{}, fmt.Errorf("%w: not a compact JWS", ErrMalformedProof)
	}
	rawHead, err := base64.RawURLEncoding.DecodeString(headSeg)
	if err != nil {
		return Proof{}, fmt.Errorf("%w: header encoding", ErrMalformedProof)
	}
	var head proofHeader
	if err := json.Unmarshal(rawHead, &head); err != nil {
		return Proof{}, fmt.Errorf("%w: header JSON", ErrMalformedProof)
	}
	if head.Typ != ProofType {
		return Proof{}, ErrProofType
	}
	if head.Alg != string(jose.ES256) {
		return Proof{}, ErrProofAlgorithm
	}
	if head.JWK == nil {
		return Proof{}, fmt.Errorf("%w: no jwk header", ErrProofKey)
	}
	// Members that carry private key material (EC, RSA, symmetric).
	for _, m := range [...]string{"d", "p", "q", "dp", "dq", "qi", "oth", "k"} {
		if _, present := head.JWK[m]; present {
			return Proof{}, fmt.Errorf("%w: jwk carries private key material", ErrProofKey)
		}
	}

	pub, jkt, err := proofKey(head.JWK)
	if err != nil {
		return Proof{}, err
	}
	signed, sigSeg := proof[:strings.LastIndexByte(proof, '.')], proof[strings.LastIndexByte(proof, '.')+1:]
	sig, err := base64.RawURLEncoding.DecodeString(sigSeg)
	if err != nil || len(sig) != 64 {
		return Proof{}, ErrProofSignature
	}
	digest := sha256.Sum256([]byte(signed))
	r, sv := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
	if !ecdsa.Verify(pub, digest[:], r, sv) {
		return Proof{}, ErrProofSignature
	}
	payload, err := base64.RawURLEncoding.DecodeString(signed[len(headSeg)+1:])
	if err != nil {
		return Proof{}, fmt.Errorf("%w: payload encoding", ErrMalformedProof)
	}
	var c proofClaims
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	if err := dec.Decode(&c); err != nil {
		return Proof{}, fmt.Errorf("%w: claims JSON", ErrMalformedProof)
	}
	if c.JTI == "" {
		return Proof{}, ErrMissingJTI
	}
	iat, err := numericDate(c.IAT)
	if err != nil {
		return Proof{}, fmt.Errorf("%w: iat: %v", ErrMalformedProof, err)
	}
	return Proof{JKT: jkt, Key: pub, JTI: c.JTI, IAT: iat, HTM: c.HTM, HTU: c.HTU, ATH: c.ATH, Nonce: c.Nonce}, nil
}

// proofKey reads the embedded public key (EC P-256, kty/crv/x/y) and its
// RFC 7638 thumbprint, computed from the canonical member order.
func proofKey(jwk map[string]json.RawMessage) (*ecdsa.PublicKey, string, error) {
	var kty, crv, x, y string
	for name, dst := range map[string]*string{"kty": &kty, "crv": &crv, "x": &x, "y": &y} {
		if err := json.Unmarshal(jwk[name], dst); err != nil {
			return nil, "", fmt.Errorf("%w: jwk %s", ErrProofKey, name)
		}
	}
	if kty != "EC" || crv != "P-256" {
		return nil, "", fmt.Errorf("%w: not an EC P-256 public key", ErrProofKey)
	}
	xb, errX := base64.RawURLEncoding.DecodeString(x)
	yb, errY := base64.RawURLEncoding.DecodeString(y)
	if errX != nil || errY != nil || len(xb) != 32 || len(yb) != 32 {
		return nil, "", fmt.Errorf("%w: bad coordinates", ErrProofKey)
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, xb...), yb...))
	if err != nil {
		return nil, "", fmt.Errorf("%w: point not on the curve", ErrProofKey)
	}
	x, y = base64.RawURLEncoding.EncodeToString(xb), base64.RawURLEncoding.EncodeToString(yb)
	sum := sha256.Sum256([]byte(`{"crv":"P-256","kty":"EC","x":"` + x + `","y":"` + y + `"}`))
	return pub, base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// numericDate converts a JWT NumericDate (seconds, possibly fractional).
func numericDate(n json.Number) (time.Time, error) {
	if n == "" {
		return time.Time{}, errors.New("missing")
	}
	if i, err := n.Int64(); err == nil {
		if i < 0 || i > math.MaxInt64/int64(time.Second) {
			return time.Time{}, errors.New("out of range")
		}
		return time.Unix(i, 0), nil
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || f < 0 || f > float64(math.MaxInt64/int64(time.Second)) {
		return time.Time{}, errors.New("not a valid number")
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), nil
}

// AccessTokenHash is the DPoP "ath" value for an access token:
// base64url(SHA-256(token)) without padding.
func AccessTokenHash(accessToken string) string {
	sum := sha256.Sum256([]byte(accessToken))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// thumbprint is the RFC 7638 SHA-256 thumbprint, base64url without padding.
func thumbprint(k *jose.JSONWebKey) (string, error) {
	tp, err := k.Thumbprint(crypto.SHA256)
	if err != nil {
		return "", fmt.Errorf("thumbprint: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(tp), nil
}

// JWKThumbprint returns the RFC 7638 SHA-256 thumbprint of a public key
// (base64url without padding), the value DPoP calls "jkt".
func JWKThumbprint(pub crypto.PublicKey) (string, error) {
	return thumbprint(&jose.JSONWebKey{Key: pub})
}

// VerifierOptions tune a Verifier. The zero value is usable.
type VerifierOptions struct {
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Window is how far iat may be from Now; default ProofWindow.
	Window time.Duration
	// ReplayCapacity bounds the number of remembered proofs; default
	// DefaultReplayCapacity. Size it above the peak number of proofs
	// accepted within twice the window: past it, the oldest entries are
	// forgotten early.
	ReplayCapacity int
	// Shared, when set, remembers accepted proofs beyond this process, so
	// that the instances sharing it refuse each other's replays. It is
	// consulted after the in-process cache, for proofs new to this
	// process only.
	Shared ReplayStore
}

// Verifier checks DPoP proofs against a request and refuses replays. It is
// safe for concurrent use. Its replay cache lives in memory, so one
// Verifier must serve every request of a process for replays to be caught;
// with a shared ReplayStore, replays are caught across processes too.
type Verifier struct {
	now    func() time.Time
	window time.Duration
	replay *ReplayCache
	shared ReplayStore
}

// NewVerifier returns a Verifier.
func NewVerifier(opts VerifierOptions) *Verifier {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Window <= 0 {
		opts.Window = ProofWindow
	}
	return &Verifier{now: opts.Now, window: opts.Window, replay: NewReplayCache(opts.ReplayCapacity), shared: opts.Shared}
}

// Verify checks a proof for a request: everything ParseProof checks, then
// htm equal to method, htu equal to url byte for byte (the caller passes
// the request's scheme, host and path without query, as received: a
// percent-encoded path stays encoded), iat within the window of now, ath
// matching accessToken when one is given (pass "" for requests without a
// token), and finally that the (key, jti) pair was never accepted before:
// by this Verifier's in-process cache (a hit refuses at once), then by the
// shared ReplayStore when there is one. A proof is remembered only once
// every other check has passed. Errors about the proof match
// ErrInvalidProof; any other error (the shared store failed, the context
// ended) is a server failure, and the proof is not accepted.
func (v *Verifier) Verify(ctx context.Context, proof, method, url, accessToken string) (Proof, error) {
	if err := ctx.Err(); err != nil {
		return Proof{}, err
	}
	p, err := ParseProof(proof)
	if err != nil {
		return Proof{}, err
	}
	if p.HTM != method {
		return Proof{}, ErrWrongMethod
	}
	if p.HTU != url {
		return Proof{}, ErrWrongURL
	}
	now := v.now()
	if p.IAT.Before(now.Add(-v.window)) {
		return Proof{}, ErrExpiredProof
	}
	if p.IAT.After(now.Add(v.window)) {
		return Proof{}, ErrProofNotYetValid
	}
	if accessToken != "" {
		want := AccessTokenHash(accessToken)
		if subtle.ConstantTimeCompare([]byte(p.ATH), []byte(want)) != 1 {
			return Proof{}, ErrBadATH
		}
	}
	// Keep the entry until the proof can no longer pass the iat check,
	// plus a margin; the cache therefore outlives the proof window.
	expires := p.IAT.Add(v.window + replayMargin)
	if !v.replay.Add(p.JKT, p.JTI, expires, now) {
		return Proof{}, ErrReplay
	}
	if v.shared != nil {
		fresh, err := v.shared.RememberDPoPProof(ctx, ReplayHash(p.JKT, p.JTI), expires, now)
		if err != nil {
			return Proof{}, fmt.Errorf("dpop: shared replay check: %w", err)
		}
		if !fresh {
			return Proof{}, ErrReplay
		}
	}
	return p, nil
}
