package admins

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/storage"
)

var errUserNotFound = fail.New(fail.NotFound, "user not found")

// audit records an action of caller.
func (s *Service) audit(ctx context.Context, caller *Principal, eventType, subject string, detail any) {
	s.events.Record(ctx, eventlog.Entry{Type: eventType, ActorDID: caller.DID(), Subject: subject, Detail: detail})
}

// Known parses permission names; unknown ones are an Invalid error that
// lists them.
func Known(names []string) (Set, error) {
	var unknown []string
	for _, n := range names {
		if !Valid(Permission(n)) {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, fail.New(fail.Invalid, "unknown permissions: "+strings.Join(slices.Compact(unknown), ", "))
	}
	return NewSet(names), nil
}

// mayGrant refuses (Forbidden) permissions the caller does not hold.
func mayGrant(caller *Principal, want Set) error {
	var lacking []string
	for _, n := range want.Sorted() {
		if !caller.Perms.Has(Permission(n)) {
			lacking = append(lacking, n)
		}
	}
	if len(lacking) > 0 {
		return fail.New(fail.Forbidden, "cannot grant permissions you do not hold: "+strings.Join(lacking, ", "))
	}
	return nil
}

// union returns the permissions in any of the sets.
func union(sets ...Set) Set {
	out := Set{}
	for _, s := range sets {
		for p := range s {
			out[p] = struct{}{}
		}
	}
	return out
}

// NewUser describes an admin user to add: a permission template (empty
// for none) and permissions on top of it.
type NewUser struct {
	DID         string
	Template    string
	Permissions []string
}

// CreateUser adds an ordinary admin user. The caller can grant only
// permissions it holds.
func (s *Service) CreateUser(ctx context.Context, caller *Principal, in NewUser) (storage.AdminUser, error) {
	did, err := syntax.ParseDID(in.DID)
	if err != nil {
		return storage.AdminUser{}, fail.New(fail.Invalid, "did is not a valid DID")
	}
	var fromTemplate Set
	if in.Template != "" {
		tmpl, ok := templates[in.Template]
		if !ok {
			return storage.AdminUser{}, fail.New(fail.Invalid, "template must be one of viewer, operator, manager, full_access")
		}
		fromTemplate = NewSet(tmpl)
	}
	extra, err := Known(in.Permissions)
	if err != nil {
		return storage.AdminUser{}, err
	}
	perms := union(fromTemplate, extra)
	if err := mayGrant(caller, perms); err != nil {
		return storage.AdminUser{}, err
	}
	u := storage.AdminUser{ID: storage.NewID(), DID: did.String(), Permissions: perms.Sorted(), CreatedAt: s.now()}
	err = s.store.CreateAdminUser(ctx, u)
	if errors.Is(err, storage.ErrConflict) {
		return storage.AdminUser{}, fail.New(fail.Conflict, "user already exists")
	}
	if err != nil {
		return storage.AdminUser{}, err
	}
	s.audit(ctx, caller, "user.created", u.DID, map[string]any{"user_id": u.ID, "permissions": u.Permissions})
	return u, nil
}

// ListUsers returns every admin user.
func (s *Service) ListUsers(ctx context.Context) ([]storage.AdminUser, error) {
	return s.store.ListAdminUsers(ctx)
}

// GetUser returns one admin user.
func (s *Service) GetUser(ctx context.Context, id string) (storage.AdminUser, error) {
	u, err := s.store.GetAdminUser(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return u, errUserNotFound
	}
	return u, err
}

// UpdatePermissions grants and revokes permissions of an ordinary admin
// user. The caller can grant only permissions it holds; the super user's
// permissions cannot be changed.
func (s *Service) UpdatePermissions(ctx context.Context, caller *Principal, id string, grantNames, revokeNames []string) (storage.AdminUser, error) {
	grant, err := Known(grantNames)
	if err != nil {
		return storage.AdminUser{}, err
	}
	revoke, err := Known(revokeNames)
	if err != nil {
		return storage.AdminUser{}, err
	}
	if both := grant.Intersect(revoke); len(both) > 0 {
		return storage.AdminUser{}, fail.New(fail.Invalid, "permissions both granted and revoked: "+strings.Join(both.Sorted(), ", "))
	}
	if err := mayGrant(caller, grant); err != nil {
		return storage.AdminUser{}, err
	}
	u, err := s.GetUser(ctx, id)
	if err != nil {
		return u, err
	}
	if u.IsSuper {
		return u, fail.New(fail.Invalid, "cannot modify the super user's permissions")
	}
	perms := union(NewSet(u.Permissions), grant)
	for q := range revoke {
		delete(perms, q)
	}
	u.Permissions = perms.Sorted()
	err = s.store.SetAdminUserPermissions(ctx, u.ID, u.Permissions)
	if errors.Is(err, storage.ErrNotFound) {
		return u, errUserNotFound
	}
	if err != nil {
		return u, err
	}
	s.audit(ctx, caller, "user.permissions_updated", u.DID, map[string]any{
		"user_id": u.ID, "granted": grant.Sorted(), "revoked": revoke.Sorted(), "permissions": u.Permissions,
	})
	return u, nil
}

// DeleteUser removes an ordinary admin user other than the caller.
func (s *Service) DeleteUser(ctx context.Context, caller *Principal, id string) error {
	u, err := s.GetUser(ctx, id)
	if err != nil {
		return err
	}
	switch {
	case u.IsSuper:
		return fail.New(fail.Invalid, "cannot delete the super user")
	case u.ID == caller.User.ID:
		return fail.New(fail.Invalid, "cannot delete yourself")
	}
	err = s.store.DeleteAdminUser(ctx, u.ID)
	if errors.Is(err, storage.ErrNotFound) {
		return errUserNotFound
	}
	if err != nil {
		return err
	}
	s.audit(ctx, caller, "user.deleted", u.DID, map[string]any{"user_id": u.ID})
	return nil
}

// TransferSuper hands the super user role from the caller to another
// admin user and returns that user. Only the super user may call it (the
// admin API's permission gate checks that before).
func (s *Service) TransferSuper(ctx context.Context, caller *Principal, targetID string) (storage.AdminUser, error) {
	if !caller.ActsAsSuper() {
		return storage.AdminUser{}, fail.New(fail.Forbidden, "insufficient permissions")
	}
	target, err := s.GetUser(ctx, targetID)
	if err != nil {
		return target, err
	}
	if target.IsSuper {
		return target, fail.New(fail.Invalid, "user is already the super user")
	}
	all := NewSet(All()).Sorted()
	err = s.store.TransferSuper(ctx, caller.User.ID, target.ID, all)
	if errors.Is(err, storage.ErrNotFound) {
		// The target was removed, or the caller stopped being the super
		// user, since the checks above.
		return target, fail.New(fail.Conflict, "super user changed concurrently; try again")
	}
	if err != nil {
		return target, err
	}
	target.IsSuper, target.Permissions = true, all
	s.audit(ctx, caller, "user.super_transferred", target.DID, map[string]any{
		"from_user_id": caller.User.ID, "from_did": caller.User.DID, "to_user_id": target.ID, "to_did": target.DID,
	})
	return target, nil
}
