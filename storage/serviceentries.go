package storage

import (
	"context"
	"time"
)

// The access modes of a service entry.
const (
	AccessAll       = "all"
	AccessAllowlist = "allowlist"
	AccessDisabled  = "disabled"
)

// ServiceEntry is a service the instance's DID document lists, bound to
// the XRPC methods it grants access to.
type ServiceEntry struct {
	// ID is assigned by the store on creation.
	ID int64
	// Fragment is the DID-document fragment without its "#"; unique.
	Fragment    string
	ServiceType string
	// AccessMode is AccessAll, AccessAllowlist or AccessDisabled.
	AccessMode string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// ServiceEntryBinding binds a service entry to an XRPC method.
type ServiceEntryBinding struct {
	EntryID int64
	NSID    string
}

// ServiceEntryStore keeps the service entries, the lexicon NSIDs each is
// bound to and the caller DIDs each admits in allowlist mode. Deleting an
// entry removes its bindings and its allowlist.
type ServiceEntryStore interface {
	// ListServiceEntries returns every entry by id.
	ListServiceEntries(ctx context.Context) ([]ServiceEntry, error)
	// GetServiceEntry returns one entry, or ErrNotFound.
	GetServiceEntry(ctx context.Context, id int64) (ServiceEntry, error)
	// CreateServiceEntry stores e (its ID is ignored) and returns it with
	// its assigned ID; ErrConflict when its fragment is taken.
	CreateServiceEntry(ctx context.Context, e ServiceEntry) (ServiceEntry, error)
	// UpdateServiceEntry replaces the fragment, type, access mode and
	// update time of entry e.ID; ErrNotFound when absent, ErrConflict when
	// the fragment is another entry's.
	UpdateServiceEntry(ctx context.Context, e ServiceEntry) error
	// DeleteServiceEntry removes an entry with its bindings and allowlist;
	// ErrNotFound when absent.
	DeleteServiceEntry(ctx context.Context, id int64) error

	// ServiceEntryMethods returns the NSIDs entry id is bound to, sorted;
	// ErrNotFound when the entry is absent.
	ServiceEntryMethods(ctx context.Context, id int64) ([]string, error)
	// BindServiceEntryMethods binds entry id to nsids (binding twice is
	// not an error); ErrNotFound when the entry is absent.
	BindServiceEntryMethods(ctx context.Context, id int64, nsids []string, at time.Time) error
	// UnbindServiceEntryMethods removes the bindings of entry id to nsids
	// (absent bindings are ignored); ErrNotFound when the entry is absent.
	UnbindServiceEntryMethods(ctx context.Context, id int64, nsids []string) error
	// ServiceEntriesForMethod returns the entries bound to nsid, by id.
	ServiceEntriesForMethod(ctx context.Context, nsid string) ([]ServiceEntry, error)
	// ListServiceEntryBindings returns every binding, by entry id then
	// NSID.
	ListServiceEntryBindings(ctx context.Context) ([]ServiceEntryBinding, error)

	// ServiceEntryAllowlist returns the DIDs on entry id's allowlist,
	// sorted; ErrNotFound when the entry is absent.
	ServiceEntryAllowlist(ctx context.Context, id int64) ([]string, error)
	// AllowServiceEntryCallers adds dids to entry id's allowlist (adding
	// twice is not an error); ErrNotFound when the entry is absent.
	AllowServiceEntryCallers(ctx context.Context, id int64, dids []string, at time.Time) error
	// DisallowServiceEntryCallers removes dids from entry id's allowlist
	// (absent ones are ignored); ErrNotFound when the entry is absent.
	DisallowServiceEntryCallers(ctx context.Context, id int64, dids []string) error
	// ServiceEntryAllows reports whether did is on the allowlist of any of
	// the entries ids.
	ServiceEntryAllows(ctx context.Context, ids []int64, did string) (bool, error)
}
