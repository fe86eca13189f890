package clientkeys

import (
	"context"
	"errors"
	"time"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
)

// Event types the instance key records in the event log; the subject is
// the kid.
const (
	EventInstanceCreated = "instance_key.created"
	EventInstanceRotated = "instance_key.rotated"
	EventInstanceRevoked = "instance_key.revoked"
)

// InstanceSealPurpose is the sealing purpose of the private half of the
// instance key kid: distinct from every client key's (SealPurpose), so a
// sealed key cannot be moved between the instance and a client.
func InstanceSealPurpose(kid string) string { return "instancekey:" + kid }

// InstanceOptions configure an Instance.
type InstanceOptions struct {
	Store storage.InstanceKeyStore
	// Sealer seals private keys; nil means token encryption is off and no
	// key can be made.
	Sealer *oauth.Sealer
	Events *eventlog.Log
	Now    func() time.Time
}

// Instance manages the instance's own OAuth client key: the ES256 key the
// instance signs its confidential-client assertions (private_key_jwt)
// with, when it signs users in as its own OAuth client. It has the life
// cycle of a client's authentication key: one current key, retiring keys
// still published after a rotation, revoked keys never published; the
// current key cannot be revoked. Retiring instance keys are not swept:
// they stay published until an operator revokes them. Private keys are
// sealed at rest and never returned.
type Instance struct{ opt InstanceOptions }

// NewInstance returns the instance key service.
func NewInstance(opt InstanceOptions) *Instance { return &Instance{opt: opt} }

var errInstanceKeyNotFound = fail.New(fail.NotFound, "instance key not found")

// Ensure gives the instance a current key unless it has one and returns
// the current key; idempotent, and safe when several processes boot at
// once. The App calls it at start-up when token encryption is on.
func (s *Instance) Ensure(ctx context.Context) (storage.ClientAuthKey, error) {
	if s.opt.Sealer == nil {
		return storage.ClientAuthKey{}, errNoSealer
	}
	k, err := generate(s.opt.Sealer, InstanceSealPurpose, s.opt.Now())
	if err != nil {
		return k, err
	}
	stored, created, err := s.opt.Store.CreateInstanceKey(ctx, k)
	if err != nil {
		return stored, err
	}
	if created {
		s.audit(ctx, "", EventInstanceCreated, stored.KID, nil)
	}
	return stored, nil
}

// List returns every instance key, current first, then retiring, then
// revoked, newest first within a status. With no key yet, one is made
// first (Ensure).
func (s *Instance) List(ctx context.Context) ([]storage.ClientAuthKey, error) {
	keys, err := s.opt.Store.ListInstanceKeys(ctx)
	if err != nil {
		return nil, err
	}
	if !hasCurrent(keys) {
		if _, err := s.Ensure(ctx); err != nil {
			return nil, err
		}
		if keys, err = s.opt.Store.ListInstanceKeys(ctx); err != nil {
			return nil, err
		}
	}
	sortByStatus(keys)
	return keys, nil
}

func hasCurrent(keys []storage.ClientAuthKey) bool {
	for _, k := range keys {
		if k.Status == storage.AuthKeyCurrent {
			return true
		}
	}
	return false
}

// Rotate makes the current key retiring and a new key current, on behalf
// of actor, and returns both. With no key yet, one is made first, so a
// rotation always leaves a retiring key behind.
func (s *Instance) Rotate(ctx context.Context, actor string) (next, retired storage.ClientAuthKey, err error) {
	if _, err = s.Ensure(ctx); err != nil {
		return next, retired, err
	}
	if next, err = generate(s.opt.Sealer, InstanceSealPurpose, s.opt.Now()); err != nil {
		return next, retired, err
	}
	if retired, err = s.opt.Store.RotateInstanceKey(ctx, next, s.opt.Now()); err != nil {
		return next, retired, err
	}
	s.audit(ctx, actor, EventInstanceRotated, next.KID, map[string]any{"retired_kid": retired.KID})
	return next, retired, nil
}

// Revoke revokes a retiring key on behalf of actor: it leaves the key set
// at once. The current key is refused (Invalid: rotate first), an unknown
// kid is NotFound, and revoking a key already revoked is a no-op.
func (s *Instance) Revoke(ctx context.Context, actor, kid string) error {
	k, err := s.opt.Store.GetInstanceKey(ctx, kid)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return errInstanceKeyNotFound
	case err != nil:
		return err
	case k.Status == storage.AuthKeyCurrent:
		return errRevokeCurrent
	case k.Status == storage.AuthKeyRevoked:
		return nil
	}
	err = s.opt.Store.RevokeInstanceKey(ctx, kid, s.opt.Now())
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return errInstanceKeyNotFound
	case errors.Is(err, storage.ErrCurrentKey):
		return errRevokeCurrent
	case err != nil:
		return err
	}
	s.audit(ctx, actor, EventInstanceRevoked, kid, nil)
	return nil
}

// KeySet is the instance's published key set: the current key, then the
// retiring keys newest first; never revoked ones.
func (s *Instance) KeySet(ctx context.Context) (oauth.JWKS, error) {
	keys, err := s.opt.Store.ListInstanceKeys(ctx)
	if err != nil {
		return oauth.NewJWKS(), err
	}
	return publishedSet(keys)
}

// Sign signs a client assertion (RFC 7523) as the instance's OAuth client
// clientID (a domain's client_id URL) toward the authorization server
// issuer, like Service.Sign: the current key without kid, else the named
// key, which may be retiring; unknown and revoked kids are refused
// (Invalid).
func (s *Instance) Sign(ctx context.Context, clientID, issuer, kid string) (Assertion, error) {
	if !validIssuer(issuer) {
		return Assertion{}, errBadIssuer
	}
	var k storage.ClientAuthKey
	var err error
	if kid == "" {
		k, err = s.Ensure(ctx)
	} else {
		k, err = s.opt.Store.GetInstanceKey(ctx, kid)
	}
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return Assertion{}, errUnknownKID
	case err != nil:
		return Assertion{}, err
	}
	return signAssertion(s.opt.Sealer, k, clientID, issuer, s.opt.Now())
}

func (s *Instance) audit(ctx context.Context, actor, eventType, kid string, detail map[string]any) {
	s.opt.Events.Record(ctx, eventlog.Entry{Type: eventType, ActorDID: actor, Subject: kid, Detail: detail})
}
