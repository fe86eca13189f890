package apiclients

import (
	"context"
	"fmt"
	"slices"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/storage"
)

// Owner is a user acting through a top-level API client on the clients
// they own under it (dev.service.*): only one level of nesting exists.
type Owner struct {
	Parent *Client // the client the user signed in to
	DID    string  // the user
}

// Refusals of owner-scoped calls, as the specification words them.
var (
	errChildManage = fail.New(fail.Unauthenticated, "child clients cannot manage API clients")
	errChildCreate = fail.New(fail.Forbidden, "Child clients cannot create API clients")
)

// CheckOwner refuses an owner acting through a child client: creating is
// Forbidden, anything else Unauthenticated.
func CheckOwner(o Owner, creating bool) error {
	switch {
	case o.Parent.ParentID == "":
		return nil
	case creating:
		return errChildCreate
	}
	return errChildManage
}

// owns reports whether c is a child of o's client owned by o's DID.
func (o Owner) owns(c storage.APIClient) bool {
	return c.ParentID == o.Parent.ID && c.OwnerDID == o.DID
}

// ListOwned returns the children of o's client that o owns, newest first.
func (m *Manager) ListOwned(ctx context.Context, o Owner) ([]storage.APIClient, error) {
	children, err := m.List(ctx, o.Parent.ID)
	return slices.DeleteFunc(children, func(c storage.APIClient) bool { return !o.owns(c) }), err
}

// GetOwned returns a client o owns; another's client is not found, so its
// existence is not revealed.
func (m *Manager) GetOwned(ctx context.Context, o Owner, id string) (storage.APIClient, error) {
	c, err := m.Get(ctx, id)
	if err == nil && !o.owns(c) {
		return storage.APIClient{}, ErrNotFound
	}
	return c, err
}

// MaxOwnedClients bounds how many clients one user may own under one
// top-level client.
const MaxOwnedClients = 25

var errTooManyOwned = fail.New(fail.Invalid, fmt.Sprintf("a user may own at most %d API clients under one client", MaxOwnedClients))

// CreateOwned creates a child of o's client owned by o, with the
// instance's default rate limits and scopes among its parent's (default
// atproto), and returns it with its secret. A user owns at most
// MaxOwnedClients under one client.
func (m *Manager) CreateOwned(ctx context.Context, o Owner, nc NewClient) (storage.APIClient, string, error) {
	if err := CheckOwner(o, true); err != nil {
		return storage.APIClient{}, "", err
	}
	owned, err := m.ListOwned(ctx, o)
	if err != nil {
		return storage.APIClient{}, "", err
	}
	if len(owned) >= MaxOwnedClients {
		return storage.APIClient{}, "", errTooManyOwned
	}
	nc.CreatedBy, nc.ParentID, nc.OwnerDID = o.DID, o.Parent.ID, o.DID
	nc.RateLimitCapacity, nc.RateLimitRefillRate = nil, nil
	return m.Create(ctx, nc)
}

// DeleteOwned removes a client o owns (and its children, should it have
// any) and frees its bucket.
func (m *Manager) DeleteOwned(ctx context.Context, o Owner, id string) error {
	c, err := m.GetOwned(ctx, o, id)
	if err != nil {
		return err
	}
	_, err = m.Delete(ctx, o.DID, c.ID)
	return err
}
