package clientkeys

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
)

// Event types recorded in the event log.
const (
	EventCreated    = "auth_key.created"
	EventRotated    = "auth_key.rotated"
	EventRevoked    = "auth_key.revoked"
	EventRevokedAll = "auth_key.revoked_all"
	// EventSwept is recorded for each retiring key the sweep removes.
	EventSwept = "auth_key.swept"
)

// SweepGrace is how long a retiring key survives the sweep even with no
// session pinned to it. An authorization started just before a rotation
// (pushed authorization request signed with the old key, the user still
// on the consent page) may still need an assertion from it for its token
// exchange; an hour comfortably covers any sign-in.
const SweepGrace = time.Hour

// SealPurpose is the sealing purpose of a client authentication key's
// private half: bound to the client and the kid, so a sealed key cannot be
// moved to another key or client.
func SealPurpose(clientID, kid string) string {
	return "authkey:" + clientID + ":" + kid
}

// JWKSPath is the path of a client's public key set: the API client's id
// (a UUID; stable for the life of the client, unlike its key, and free of
// characters that need escaping).
func JWKSPath(clientID string) string {
	return "/oauth/clients/" + url.PathEscape(clientID) + "/jwks.json"
}

// JWKSURI is the jwks_uri a client publishes in its client metadata
// document: publicURL followed by JWKSPath.
func JWKSURI(publicURL, clientID string) string {
	return strings.TrimRight(publicURL, "/") + JWKSPath(clientID)
}

// NewKey generates an ES256 (P-256) key for clientID and returns it ready
// for storage: a fresh kid, the private key sealed for SealPurpose and the
// public JWK. The private key never leaves the returned value unsealed.
func NewKey(sealer *oauth.Sealer, clientID string, now time.Time) (storage.ClientAuthKey, error) {
	k, err := generate(sealer, func(kid string) string { return SealPurpose(clientID, kid) }, now)
	k.ClientID = clientID
	return k, err
}

// generate makes a current ES256 key with a fresh kid, its private half
// sealed for purpose(kid).
func generate(sealer *oauth.Sealer, purpose func(kid string) string, now time.Time) (storage.ClientAuthKey, error) {
	if sealer == nil {
		return storage.ClientAuthKey{}, errors.New("authkeys: no sealer configured")
	}
	priv, err := oauth.GenerateKey()
	if err != nil {
		return storage.ClientAuthKey{}, err
	}
	kid := oauth.NewKeyID()
	raw, err := oauth.MarshalPrivateKey(priv)
	if err != nil {
		return storage.ClientAuthKey{}, err
	}
	sealed, err := sealer.Seal(purpose(kid), raw)
	clear(raw)
	if err != nil {
		return storage.ClientAuthKey{}, fmt.Errorf("authkeys: seal key: %w", err)
	}
	pub, err := oauth.NewPublicJWK(&priv.PublicKey, kid)
	if err != nil {
		return storage.ClientAuthKey{}, err
	}
	jwk, err := json.Marshal(pub)
	if err != nil {
		return storage.ClientAuthKey{}, fmt.Errorf("authkeys: encode public key: %w", err)
	}
	return storage.ClientAuthKey{
		KID: kid, SealedPrivateKey: sealed, PublicJWK: jwk, Status: storage.AuthKeyCurrent, CreatedAt: now,
	}, nil
}

// sealPurposeOf is the sealing purpose of k's private half: SealPurpose for
// a client's key, InstanceSealPurpose for the instance's (no ClientID).
func sealPurposeOf(k storage.ClientAuthKey) string {
	if k.ClientID == "" {
		return InstanceSealPurpose(k.KID)
	}
	return SealPurpose(k.ClientID, k.KID)
}

// PrivateKey opens the sealed private key of k, a client's key or the
// instance's.
func PrivateKey(sealer *oauth.Sealer, k storage.ClientAuthKey) (*ecdsa.PrivateKey, error) {
	if sealer == nil {
		return nil, errors.New("authkeys: no sealer configured")
	}
	raw, err := sealer.Open(sealPurposeOf(k), k.SealedPrivateKey)
	if err != nil {
		return nil, fmt.Errorf("authkeys: open key %s: %w", k.KID, err)
	}
	defer clear(raw)
	key, err := oauth.ParsePrivateKey(raw)
	if err != nil {
		return nil, fmt.Errorf("authkeys: key %s: %w", k.KID, err)
	}
	return key, nil
}

// PublicJWK decodes k's published JWK.
func PublicJWK(k storage.ClientAuthKey) (oauth.PublicJWK, error) {
	var j oauth.PublicJWK
	if err := json.Unmarshal(k.PublicJWK, &j); err != nil {
		return j, fmt.Errorf("authkeys: public JWK of %s: %w", k.KID, err)
	}
	if _, err := j.PublicKey(); err != nil {
		return j, fmt.Errorf("authkeys: public JWK of %s: %w", k.KID, err)
	}
	j.Kid, j.Alg, j.Use = k.KID, oauth.SigningAlgorithm, "sig"
	return j, nil
}

// Published reports whether k belongs in the client's key set: current and
// retiring keys do, revoked ones never.
func Published(k storage.ClientAuthKey) bool {
	return k.Status == storage.AuthKeyCurrent || k.Status == storage.AuthKeyRetiring
}

// sortByStatus orders keys current, retiring, revoked, keeping the order
// within a status.
func sortByStatus(keys []storage.ClientAuthKey) {
	slices.SortStableFunc(keys, func(a, b storage.ClientAuthKey) int {
		return statusRank(a.Status) - statusRank(b.Status)
	})
}

// statusRank orders keys current, retiring, revoked.
func statusRank(status string) int {
	switch status {
	case storage.AuthKeyCurrent:
		return 0
	case storage.AuthKeyRetiring:
		return 1
	}
	return 2
}

// SweepStore is what Sweep needs.
type SweepStore interface {
	SweepRetiringClientAuthKeys(ctx context.Context, retiredBefore time.Time) ([]storage.ClientAuthKey, error)
}

// Sweep removes the retiring keys that no session is pinned to any longer
// and that retired more than SweepGrace before now, recording EventSwept
// for each (events may be nil). It returns how many keys went. The App
// runs it hourly.
func Sweep(ctx context.Context, store SweepStore, events *eventlog.Log, now time.Time) (int, error) {
	swept, err := store.SweepRetiringClientAuthKeys(ctx, now.Add(-SweepGrace))
	if err != nil {
		return 0, fmt.Errorf("authkeys: sweep: %w", err)
	}
	if events != nil {
		for _, k := range swept {
			events.Record(ctx, eventlog.Entry{Type: EventSwept, Subject: k.ClientID, Detail: map[string]any{
				"kid": k.KID, "retired_at": k.RetiredAt.UTC().Format(time.RFC3339Nano),
			}})
		}
	}
	return len(swept), nil
}
