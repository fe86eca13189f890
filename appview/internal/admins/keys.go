package admins

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/lexview/lexview/storage"
)

// KeyPrefix starts every admin API key secret.
const KeyPrefix = "hv_"

// keyPrefixLen is how many leading characters of a secret are kept for
// recognising a key.
const keyPrefixLen = 8

// HashKey returns the stored form (hex SHA-256) of an API secret.
func HashKey(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// MintKey creates an admin API key for the admin user userID holding perms,
// stores only its hash, and returns the secret ("hv_" and 43 characters of
// base64url randomness), which cannot be recovered afterwards. The caller
// checks that perms are known and that the user may hold them.
func MintKey(ctx context.Context, store storage.AdminStore, userID, name string, perms []string, now time.Time) (string, storage.AdminAPIKey, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", storage.AdminAPIKey{}, fmt.Errorf("mint API key: %w", err)
	}
	secret := KeyPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	perms = slices.Clone(perms)
	slices.Sort(perms)
	key := storage.AdminAPIKey{
		ID: storage.NewID(), UserID: userID, Name: name, Prefix: secret[:keyPrefixLen], Hash: HashKey(secret),
		Permissions: slices.Compact(perms), CreatedAt: now,
	}
	if err := store.CreateAdminAPIKey(ctx, key); err != nil {
		return "", storage.AdminAPIKey{}, fmt.Errorf("mint API key: %w", err)
	}
	return secret, key, nil
}
