package admins

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lexview/lexview/appview/internal/core/fail"
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

// MaxKeyName bounds an API key's name, in characters.
const MaxKeyName = 100

// CreateKey mints an admin API key for the caller holding perms (which
// the caller must hold) and returns the key and its secret, which cannot
// be recovered afterwards.
func (s *Service) CreateKey(ctx context.Context, caller *Principal, name string, perms []string) (string, storage.AdminAPIKey, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", storage.AdminAPIKey{}, fail.New(fail.Invalid, "invalid request body")
	case utf8.RuneCountInString(name) > MaxKeyName:
		return "", storage.AdminAPIKey{}, fail.Invalidf("name must be at most %d characters", MaxKeyName)
	case len(perms) == 0:
		return "", storage.AdminAPIKey{}, fail.New(fail.Invalid, "permissions must not be empty")
	}
	set, err := Known(perms)
	if err != nil {
		return "", storage.AdminAPIKey{}, err
	}
	if err := mayGrant(caller, set); err != nil {
		return "", storage.AdminAPIKey{}, err
	}
	secret, key, err := MintKey(ctx, s.store, caller.User.ID, name, set.Sorted(), s.now())
	if err != nil {
		return "", key, err
	}
	s.audit(ctx, caller, "api_key.created", key.ID, map[string]any{
		"name": key.Name, "key_prefix": key.Prefix, "permissions": key.Permissions, "user_id": key.UserID,
	})
	return secret, key, nil
}

// KeyInfo is a listed admin API key with its owner's DID ("" when the
// owner is gone).
type KeyInfo struct {
	storage.AdminAPIKey
	UserDID string
}

// ListKeys returns every admin API key (never a secret).
func (s *Service) ListKeys(ctx context.Context) ([]KeyInfo, error) {
	keys, err := s.store.ListAdminAPIKeys(ctx)
	if err != nil {
		return nil, err
	}
	users, err := s.store.ListAdminUsers(ctx)
	if err != nil {
		return nil, err
	}
	dids := make(map[string]string, len(users))
	for _, u := range users {
		dids[u.ID] = u.DID
	}
	out := make([]KeyInfo, len(keys))
	for i, k := range keys {
		k.Permissions = slices.Clone(k.Permissions)
		slices.Sort(k.Permissions)
		out[i] = KeyInfo{AdminAPIKey: k, UserDID: dids[k.UserID]}
	}
	return out, nil
}

// RevokeKey deletes an admin API key.
func (s *Service) RevokeKey(ctx context.Context, caller *Principal, id string) error {
	err := s.store.DeleteAdminAPIKey(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return fail.New(fail.NotFound, "API key not found")
	}
	if err != nil {
		return err
	}
	s.audit(ctx, caller, "api_key.revoked", id, nil)
	return nil
}
