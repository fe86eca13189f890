package storage

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// ErrStale is returned by an optimistic update whose expected version no
// longer matches the stored row: another writer got there first, and the
// caller should re-read instead of overwriting.
var ErrStale = errors.New("stale: updated concurrently")

// ErrCurrentKey is returned when an operation refuses to touch a client's
// current authentication key (revoking it, for example).
var ErrCurrentKey = errors.New("the current key cannot be revoked")

// DPoPProvision is a DPoP key handed to an app by POST /oauth/dpop-keys,
// waiting to be registered with a session. Its provision_id (hvp_...) is
// a single-use bearer handle: only its SHA-256 is stored.
type DPoPProvision struct {
	ID            string // UUID of the DPoP key; device sessions carry it as dpop_key_id
	HandleHash    string // hex SHA-256 of the hvp_... provision_id
	ClientID      string
	SealedKey     string // the sealed private JWK
	JKT           string // RFC 7638 thumbprint of the key
	PKCEChallenge string // S256 challenge of public clients; "" for confidential ones
	CreatedAt     time.Time
	ExpiresAt     time.Time
	UsedAt        time.Time // zero while unused
}

// DeviceSession is one user's OAuth session on one device of an app,
// keyed by the DPoP key's thumbprint. Tokens and the key are sealed above
// the storage layer and stored opaquely.
type DeviceSession struct {
	ID                 string // UUID
	ClientID           string
	DID                string
	DPoPKeyID          string // the DPoPProvision.ID the key came from
	JKT                string // thumbprint of the DPoP key
	SealedDPoPKey      string
	SealedAccessToken  string
	SealedRefreshToken string
	ExpiresAt          time.Time // access-token expiry
	Scopes             string    // space-separated
	PDSURL             string
	Issuer             string // the authorization server's issuer URL
	AuthKID            string // the client authentication key that established it; "" for none
	// AppTokenHash is the hex SHA-256 of the access token the app
	// registered and presents on its calls, and AppExpiresAt its expiry.
	// They stay put when Lexview refreshes the PDS tokens itself.
	AppTokenHash string
	AppExpiresAt time.Time
	// Version counts token updates (1 at creation). UpdateDeviceSessionTokens
	// takes the version read and refuses to write if it moved.
	Version   int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// SessionTokens is a refreshed token set for UpdateDeviceSessionTokens.
type SessionTokens struct {
	SessionID          string
	Version            int64 // the DeviceSession.Version the refresh started from
	SealedAccessToken  string
	SealedRefreshToken string
	ExpiresAt          time.Time
	Scopes             string // "" keeps the stored scopes
	UpdatedAt          time.Time
}

// Client authentication key statuses.
const (
	AuthKeyCurrent  = "current"
	AuthKeyRetiring = "retiring"
	AuthKeyRevoked  = "revoked"
)

// ClientAuthKey is an ES256 key with which Lexview signs client assertions
// for an API client.
type ClientAuthKey struct {
	KID              string
	ClientID         string
	SealedPrivateKey string
	PublicJWK        json.RawMessage // the published JWK
	Status           string          // AuthKeyCurrent, AuthKeyRetiring or AuthKeyRevoked
	CreatedAt        time.Time
	RetiredAt        time.Time // zero unless retiring or revoked after retiring
	RevokedAt        time.Time // zero unless revoked
	SessionCount     int64     // device sessions pinned to the key (filled on reads)
}

// OAuthStore keeps DPoP key provisions, device sessions and client
// authentication keys. All rows belong to an API client and disappear with
// it.
type OAuthStore interface {
	// CreateDPoPProvision stores a provision; ErrConflict when its handle
	// hash is taken.
	CreateDPoPProvision(ctx context.Context, p DPoPProvision) error
	// GetDPoPProvision returns the provision with handleHash, belonging to
	// clientID, when it is unused and expires after now; otherwise
	// ErrNotFound. It does not use it.
	GetDPoPProvision(ctx context.Context, clientID, handleHash string, now time.Time) (DPoPProvision, error)
	// ConsumeDPoPProvision marks the provision with handleHash, belonging
	// to clientID, used at now and returns it, in one statement: only
	// when it is unused and expires after now. Otherwise (unknown, foreign,
	// used or expired) it returns ErrNotFound. Two concurrent consumers of
	// one provision never both succeed.
	ConsumeDPoPProvision(ctx context.Context, clientID, handleHash string, now time.Time) (DPoPProvision, error)
	// PurgeDPoPProvisions removes provisions that expired before t.
	PurgeDPoPProvisions(ctx context.Context, before time.Time) (int64, error)

	// CreateDeviceSession stores s (its Version is set to 1); ErrConflict
	// when the client already has a session for the key (ClientID, JKT).
	CreateDeviceSession(ctx context.Context, s DeviceSession) error
	// GetDeviceSession returns a session by ID or ErrNotFound.
	GetDeviceSession(ctx context.Context, id string) (DeviceSession, error)
	// GetDeviceSessionByJKT returns the client's session bound to a DPoP
	// key, or ErrNotFound.
	GetDeviceSessionByJKT(ctx context.Context, clientID, jkt string) (DeviceSession, error)
	// ListDeviceSessions returns a user's sessions under a client, newest
	// first.
	ListDeviceSessions(ctx context.Context, clientID, did string) ([]DeviceSession, error)
	// DeleteDeviceSession removes the session id if it belongs to the
	// client and the user; ErrNotFound otherwise.
	DeleteDeviceSession(ctx context.Context, clientID, did, id string) error
	// DeleteDeviceSessions removes every session of a user under a client
	// and returns how many there were.
	DeleteDeviceSessions(ctx context.Context, clientID, did string) (int64, error)
	// UpdateDeviceSessionTokens stores refreshed tokens if the session is
	// still at t.Version, incrementing it, and returns the updated session.
	// It returns ErrStale when the version moved (a concurrent refresh won:
	// re-read the session) and ErrNotFound when the session is gone.
	UpdateDeviceSessionTokens(ctx context.Context, t SessionTokens) (DeviceSession, error)

	// CreateClientAuthKey stores k as the client's current key unless the
	// client has a current key already; then it returns that key and
	// created false (the operation is idempotent).
	CreateClientAuthKey(ctx context.Context, k ClientAuthKey) (stored ClientAuthKey, created bool, err error)
	// RotateClientAuthKey turns the client's current key into a retiring
	// one (RetiredAt at) and stores next as the current key, in one
	// transaction. It returns the retired key, or ErrNotFound when the
	// client has no current key.
	RotateClientAuthKey(ctx context.Context, clientID string, next ClientAuthKey, at time.Time) (retired ClientAuthKey, err error)
	// GetClientAuthKey returns one key with its session count, or
	// ErrNotFound.
	GetClientAuthKey(ctx context.Context, clientID, kid string) (ClientAuthKey, error)
	// GetCurrentClientAuthKey returns the client's current key, or
	// ErrNotFound.
	GetCurrentClientAuthKey(ctx context.Context, clientID string) (ClientAuthKey, error)
	// ListClientAuthKeys returns every key of a client (revoked ones too)
	// with session counts, newest first.
	ListClientAuthKeys(ctx context.Context, clientID string) ([]ClientAuthKey, error)
	// RevokeClientAuthKey revokes a retiring key and deletes the sessions
	// pinned to it, in one transaction, returning how many sessions went.
	// It returns ErrCurrentKey for the current key (unchanged), ErrNotFound
	// for an unknown kid, and 0 sessions for a key already revoked.
	RevokeClientAuthKey(ctx context.Context, clientID, kid string, at time.Time) (sessions int64, err error)
	// RevokeAllClientAuthKeys revokes every key of a client and deletes the
	// sessions pinned to any of them, returning how many keys changed
	// status and how many sessions went. ErrNotFound, and no change, when
	// the client holds no key that is current or retiring (none at all, or
	// only revoked ones).
	RevokeAllClientAuthKeys(ctx context.Context, clientID string, at time.Time) (keys, sessions int64, err error)
	// SweepRetiringClientAuthKeys removes the retiring keys, retired
	// before retiredBefore, that no session is pinned to any longer, and
	// returns them. Pass the current time to sweep every such key, or an
	// earlier one to leave in-flight authorizations a grace period.
	SweepRetiringClientAuthKeys(ctx context.Context, retiredBefore time.Time) ([]ClientAuthKey, error)
}
