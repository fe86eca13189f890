package storage

import (
	"context"
	"time"
)

// InstanceKeyStore keeps the instance's own OAuth client keys: the ES256
// keys it signs its confidential-client assertions with. They have the life
// cycle of client authentication keys (AuthKeyCurrent, AuthKeyRetiring,
// AuthKeyRevoked) and are stored as ClientAuthKey values whose ClientID is
// empty and whose SessionCount is zero.
type InstanceKeyStore interface {
	// CreateInstanceKey stores k as the current key unless one exists;
	// then it returns that key and created false (idempotent, and safe
	// when several processes boot at once).
	CreateInstanceKey(ctx context.Context, k ClientAuthKey) (stored ClientAuthKey, created bool, err error)
	// RotateInstanceKey turns the current key into a retiring one
	// (RetiredAt at) and stores next as the current key, in one
	// transaction. It returns the retired key, or ErrNotFound when there
	// is no current key.
	RotateInstanceKey(ctx context.Context, next ClientAuthKey, at time.Time) (retired ClientAuthKey, err error)
	// GetInstanceKey returns one key, or ErrNotFound.
	GetInstanceKey(ctx context.Context, kid string) (ClientAuthKey, error)
	// ListInstanceKeys returns every key (revoked ones too), newest first.
	ListInstanceKeys(ctx context.Context) ([]ClientAuthKey, error)
	// RevokeInstanceKey revokes a retiring key (RevokedAt at). It returns
	// ErrCurrentKey for the current key (unchanged), ErrNotFound for an
	// unknown kid, and nil for a key already revoked.
	RevokeInstanceKey(ctx context.Context, kid string, at time.Time) error
}
