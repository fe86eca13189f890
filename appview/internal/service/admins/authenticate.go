package admins

import (
	"context"
	"crypto/subtle"
	"errors"
	"sync"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/storage"
)

var errBadKey = fail.New(fail.Unauthenticated, "invalid API key")

// ByKey authenticates an admin API key secret: the key found by its hash
// (compared in constant time), its creator still an admin user. The
// caller's permissions are the key's, within the creator's current ones.
func (s *Service) ByKey(ctx context.Context, secret string) (*Principal, error) {
	hash := HashKey(secret)
	key, err := s.store.GetAdminAPIKeyByHash(ctx, hash)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, errBadKey
	}
	if err != nil {
		return nil, err
	}
	if subtle.ConstantTimeCompare([]byte(key.Hash), []byte(hash)) != 1 {
		return nil, errBadKey
	}
	user, err := s.store.GetAdminUser(ctx, key.UserID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, errBadKey // the creator was removed
	}
	if err != nil {
		return nil, err
	}
	s.touch(ctx, "key:"+key.ID, func(at time.Time) error { return s.store.TouchAdminAPIKey(ctx, key.ID, at) })
	s.touch(ctx, "user:"+user.ID, func(at time.Time) error { return s.store.TouchAdminUser(ctx, user.ID, at) })
	return &Principal{User: user, KeyID: key.ID, Perms: NewSet(key.Permissions).Intersect(EffectivePermissions(user))}, nil
}

// ByDID authenticates a DID proven by the front end (a service-auth JWT,
// the session cookie): its admin user, or, on a fresh instance with no
// admin user yet, the super user it becomes when the claim policy lets a
// request carrying claimToken claim the instance.
func (s *Service) ByDID(ctx context.Context, did syntax.DID, claimToken string) (*Principal, error) {
	user, err := s.store.GetAdminUserByDID(ctx, did.String())
	if errors.Is(err, storage.ErrNotFound) {
		user, err = s.claim(ctx, did, claimToken)
	}
	if err != nil {
		return nil, err
	}
	s.touch(ctx, "user:"+user.ID, func(at time.Time) error { return s.store.TouchAdminUser(ctx, user.ID, at) })
	return &Principal{User: user, Perms: EffectivePermissions(user)}, nil
}

// touches debounces last_used_at writes.
type touches struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// touch records a use at most once a minute per subject.
func (s *Service) touch(ctx context.Context, subject string, write func(time.Time) error) {
	now := s.now()
	s.touched.mu.Lock()
	if s.touched.last == nil {
		s.touched.last = map[string]time.Time{}
	}
	last, seen := s.touched.last[subject]
	if seen && now.Sub(last) < time.Minute {
		s.touched.mu.Unlock()
		return
	}
	s.touched.last[subject] = now
	s.touched.mu.Unlock()
	if err := write(now); err != nil {
		s.log.WarnContext(ctx, "recording last use failed", "subject", subject, "err", err)
	}
}
