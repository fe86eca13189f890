package oauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// GenerateKey makes a new EC P-256 private key for DPoP or client
// authentication.
func GenerateKey() (*ecdsa.PrivateKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("oauth: generate key: %w", err)
	}
	return k, nil
}

// PrivateJWK is a private EC P-256 key as a JSON Web Key: the shape of the
// dpop_key returned by DPoP key provisioning. X, Y and D are base64url
// without padding of exactly 32 bytes each.
type PrivateJWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
	D   string `json:"d"`
}

// NewPrivateJWK encodes a P-256 private key as a JWK.
func NewPrivateJWK(key *ecdsa.PrivateKey) (PrivateJWK, error) {
	if key == nil || key.Curve != elliptic.P256() {
		return PrivateJWK{}, errors.New("oauth: not an EC P-256 private key")
	}
	d, err := key.Bytes()
	if err != nil {
		return PrivateJWK{}, fmt.Errorf("oauth: encode private key: %w", err)
	}
	pub, err := key.PublicKey.Bytes() // 0x04 || X || Y
	if err != nil {
		return PrivateJWK{}, fmt.Errorf("oauth: encode public key: %w", err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	return PrivateJWK{Kty: "EC", Crv: "P-256", X: enc(pub[1:33]), Y: enc(pub[33:65]), D: enc(d)}, nil
}

// Key decodes the JWK into a private key, checking that x and y are the
// public point of d.
func (j PrivateJWK) Key() (*ecdsa.PrivateKey, error) {
	if j.Kty != "EC" || j.Crv != "P-256" {
		return nil, errors.New("oauth: JWK is not an EC P-256 key")
	}
	dec := func(s string) ([]byte, error) {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil || len(b) != 32 {
			return nil, errors.New("oauth: JWK coordinates must be base64url of 32 bytes")
		}
		return b, nil
	}
	d, err := dec(j.D)
	if err != nil {
		return nil, err
	}
	x, err := dec(j.X)
	if err != nil {
		return nil, err
	}
	y, err := dec(j.Y)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d)
	if err != nil {
		return nil, fmt.Errorf("oauth: JWK private key: %w", err)
	}
	pub, err := key.PublicKey.Bytes()
	if err != nil {
		return nil, fmt.Errorf("oauth: JWK public key: %w", err)
	}
	if string(pub[1:33]) != string(x) || string(pub[33:65]) != string(y) {
		return nil, errors.New("oauth: JWK x and y do not match d")
	}
	return key, nil
}

// MarshalPrivateKey encodes a P-256 private key as private JWK JSON, the
// form to seal for storage.
func MarshalPrivateKey(key *ecdsa.PrivateKey) ([]byte, error) {
	j, err := NewPrivateJWK(key)
	if err != nil {
		return nil, err
	}
	return json.Marshal(j)
}

// ParsePrivateKey decodes private JWK JSON made by MarshalPrivateKey.
func ParsePrivateKey(data []byte) (*ecdsa.PrivateKey, error) {
	var j PrivateJWK
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("oauth: private JWK: %w", err)
	}
	return j.Key()
}

// Signer makes DPoP proofs with one private key, for requests Lexview
// sends to PDSes and authorization servers on a user's behalf. It is safe
// for concurrent use.
type Signer struct {
	signer jose.Signer
	jkt    string
	now    func() time.Time
}

// NewSigner returns a Signer for a P-256 private key. now is the clock
// (nil means time.Now).
func NewSigner(key *ecdsa.PrivateKey, now func() time.Time) (*Signer, error) {
	if key == nil || key.Curve != elliptic.P256() {
		return nil, errors.New("oauth: DPoP signer needs an EC P-256 private key")
	}
	if now == nil {
		now = time.Now
	}
	js, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key},
		(&jose.SignerOptions{EmbedJWK: true}).WithType(ProofType))
	if err != nil {
		return nil, fmt.Errorf("oauth: DPoP signer: %w", err)
	}
	jkt, err := JWKThumbprint(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	return &Signer{signer: js, jkt: jkt, now: now}, nil
}

// JKT is the RFC 7638 thumbprint of the signer's public key.
func (s *Signer) JKT() string { return s.jkt }

// NewProof makes a DPoP proof for a request: typ dpop+jwt, alg ES256, the
// public jwk, a random jti, iat now, htm method and htu the URL without its
// query and fragment. ath is set when accessToken is not empty, and nonce
// when nonce is not empty (the server's last DPoP-Nonce).
func (s *Signer) NewProof(method, url, accessToken, nonce string) (string, error) {
	if i := strings.IndexAny(url, "?#"); i >= 0 {
		url = url[:i]
	}
	claims := proofClaimsOut{
		JTI: randomID(), HTM: method, HTU: url, IAT: s.now().Unix(), Nonce: nonce,
	}
	if accessToken != "" {
		claims.ATH = AccessTokenHash(accessToken)
	}
	return signJSON(s.signer, claims)
}

type proofClaimsOut struct {
	JTI   string `json:"jti"`
	HTM   string `json:"htm"`
	HTU   string `json:"htu"`
	IAT   int64  `json:"iat"`
	ATH   string `json:"ath,omitempty"`
	Nonce string `json:"nonce,omitempty"`
}

// signJSON signs claims as a compact JWS.
func signJSON(signer jose.Signer, claims any) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("oauth: encode claims: %w", err)
	}
	obj, err := signer.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("oauth: sign: %w", err)
	}
	out, err := obj.CompactSerialize()
	if err != nil {
		return "", fmt.Errorf("oauth: serialize: %w", err)
	}
	return out, nil
}

// randomID returns 16 random bytes as base64url: a jti.
func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
