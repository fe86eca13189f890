package oauth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
)

// PKCE (RFC 7636) with the S256 method, as public clients use it between
// DPoP key provisioning and session registration.

// ErrPKCE is returned when a PKCE verifier does not match its challenge or
// is not well formed.
var ErrPKCE = errors.New("oauth: PKCE verification failed")

// ValidPKCEVerifier reports whether v is a well-formed code verifier:
// 43 to 128 characters of ALPHA, DIGIT, "-", ".", "_" and "~".
func ValidPKCEVerifier(v string) bool {
	if len(v) < 43 || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if !unreserved(v[i]) {
			return false
		}
	}
	return true
}

// ValidPKCEChallenge reports whether c can be an S256 challenge: the
// base64url encoding (no padding) of 32 bytes.
func ValidPKCEChallenge(c string) bool {
	if len(c) != 43 {
		return false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(c)
	return err == nil && len(b) == sha256.Size
}

func unreserved(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// PKCEChallenge returns the S256 challenge of a verifier:
// base64url(SHA-256(verifier)) without padding.
func PKCEChallenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// VerifyPKCE checks an S256 challenge against its verifier. It returns
// ErrPKCE when the verifier is malformed or does not match.
func VerifyPKCE(verifier, challenge string) error {
	if !ValidPKCEVerifier(verifier) {
		return ErrPKCE
	}
	if subtle.ConstantTimeCompare([]byte(PKCEChallenge(verifier)), []byte(challenge)) != 1 {
		return ErrPKCE
	}
	return nil
}
