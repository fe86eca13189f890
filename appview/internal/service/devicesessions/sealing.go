package devicesessions

import (
	"crypto/sha256"
	"encoding/hex"
)

// The sealing purposes of a device session's secrets: each is sealed
// bound to its session and its role, so that one cannot be opened as
// another.

// AccessTokenPurpose is the sealing purpose of a session's access token.
func AccessTokenPurpose(sessionID string) string { return "session:" + sessionID + ":access_token" }

// RefreshTokenPurpose is the sealing purpose of a session's refresh token.
func RefreshTokenPurpose(sessionID string) string { return "session:" + sessionID + ":refresh_token" }

// DPoPKeyPurpose is the sealing purpose of a session's DPoP private key.
func DPoPKeyPurpose(sessionID string) string { return "session:" + sessionID + ":dpop_key" }

// TokenHash is the stored form (hex SHA-256) of an app's access token.
func TokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}
