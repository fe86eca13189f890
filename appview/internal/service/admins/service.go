package admins

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/storage"
)

// Service manages admin users and admin API keys.
type Service struct {
	store       storage.AdminStore
	events      *eventlog.Log
	now         func() time.Time
	log         *slog.Logger
	claimPolicy ClaimPolicy
	touched     touches
}

// Options configure a Service.
type Options struct {
	Store storage.AdminStore
	// Events records the service's actions.
	Events *eventlog.Log
	// Claim says how a fresh instance may be claimed.
	Claim  ClaimPolicy
	Now    func() time.Time // default time.Now
	Logger *slog.Logger     // default slog.Default()
}

// New returns the service over opts.Store.
func New(opts Options) *Service {
	s := &Service{store: opts.Store, events: opts.Events, now: opts.Now, log: opts.Logger, claimPolicy: opts.Claim}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	return s
}

// ErrBootstrapRefused is matched (errors.Is) by the error Bootstrap
// returns when it refuses: a super user exists and the caller may not get
// a key this way.
var ErrBootstrapRefused = errors.New("bootstrap refused")

// Bootstrap makes did the super user if no admin user exists yet, or, with
// forceNewKey, accepts did when it already is the super user; then it mints
// an admin API key holding every permission and returns its secret. It is
// the command's `admin bootstrap`. A refusal is a Conflict error matching
// ErrBootstrapRefused, with a message that says what to do.
func (s *Service) Bootstrap(ctx context.Context, did syntax.DID, forceNewKey bool) (string, error) {
	u := s.newSuperUser(did)
	stored, err := s.store.BootstrapSuperUser(ctx, u)
	if err != nil {
		return "", err
	}
	if stored {
		s.events.Record(ctx, eventlog.Entry{Type: "user.bootstrapped", ActorDID: u.DID, Subject: u.DID,
			Detail: map[string]any{"user_id": u.ID, "via": "command"}})
	} else {
		existing, err := s.store.GetAdminUserByDID(ctx, did.String())
		switch {
		case err == nil && existing.IsSuper && forceNewKey:
			u = existing
		case err == nil && existing.IsSuper:
			return "", fail.Wrap(fail.Conflict, fmt.Sprintf(
				"%s is already the super user; pass --force-new-key to mint a new API key for it", did), ErrBootstrapRefused)
		case err == nil || errors.Is(err, storage.ErrNotFound):
			return "", fail.Wrap(fail.Conflict, s.refusal(ctx, did), ErrBootstrapRefused)
		default:
			return "", err
		}
	}
	secret, key, err := MintKey(ctx, s.store, u.ID, "bootstrap", NewSet(All()).Sorted(), s.now())
	if err != nil {
		return "", err
	}
	s.events.Record(ctx, eventlog.Entry{Type: "api_key.created", ActorDID: u.DID, Subject: key.ID,
		Detail: map[string]any{"name": key.Name, "key_prefix": key.Prefix, "permissions": key.Permissions, "user_id": u.ID, "via": "command"}})
	s.log.Info("admin API key minted", "did", u.DID, "key_id", key.ID, "new_super_user", stored)
	return secret, nil
}

// refusal explains why did cannot be bootstrapped: admin users exist and
// did is not the super user.
func (s *Service) refusal(ctx context.Context, did syntax.DID) string {
	all, _ := s.store.ListAdminUsers(ctx)
	for _, u := range all {
		if u.IsSuper {
			return fmt.Sprintf("a super user already exists (%s); refusing to bootstrap %s. "+
				"Only the super user can get a new key this way (--force-new-key --did %s)", u.DID, did, u.DID)
		}
	}
	return fmt.Sprintf("admin users already exist; refusing to bootstrap %s", did)
}

// ClaimFirst makes did the super user when no admin user exists yet (the
// first authenticated admin request of a fresh instance) and returns the
// user. When admin users exist it returns did's user if there is one (a
// concurrent claim by the same DID), else a Forbidden error.
func (s *Service) ClaimFirst(ctx context.Context, did syntax.DID) (storage.AdminUser, error) {
	u := s.newSuperUser(did)
	stored, err := s.store.BootstrapSuperUser(ctx, u)
	if err != nil {
		return storage.AdminUser{}, err
	}
	if stored {
		s.log.InfoContext(ctx, "bootstrap: first admin became the super user", "did", did)
		s.events.Record(ctx, eventlog.Entry{Type: "user.bootstrapped", ActorDID: did.String(), Subject: did.String()})
		return u, nil
	}
	user, err := s.store.GetAdminUserByDID(ctx, did.String())
	if errors.Is(err, storage.ErrNotFound) {
		return storage.AdminUser{}, errForbidden
	}
	return user, err
}

// newSuperUser is did as a new super user holding every permission.
func (s *Service) newSuperUser(did syntax.DID) storage.AdminUser {
	return storage.AdminUser{ID: storage.NewID(), DID: did.String(), IsSuper: true, Permissions: NewSet(All()).Sorted(), CreatedAt: s.now()}
}
