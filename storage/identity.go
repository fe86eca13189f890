package storage

import (
	"context"
	"errors"
	"time"
)

// ErrPrimaryDomain is returned when deleting the primary domain.
var ErrPrimaryDomain = errors.New("the primary domain cannot be deleted")

// Domain is an origin (scheme, host and optional port) the instance is
// served on. Exactly one domain is primary once the instance has booted;
// the store holds at most one primary whatever races occur.
type Domain struct {
	ID        string
	URL       string // an origin, normalised by the caller; unique
	IsPrimary bool
	CreatedAt time.Time
	UpdatedAt time.Time
}

// VerificationMethod is a public key the instance's DID document lists.
type VerificationMethod struct {
	// Fragment is the DID-document fragment without its "#"; unique.
	Fragment string
	// KeyType names the curve: "p256" or "secp256k1".
	KeyType string
	// PublicKeyMultibase is the multikey public key.
	PublicKeyMultibase string
	// SealedPrivateKey holds the private key the instance generated,
	// sealed by the caller (AES-256-GCM); empty for a supplied public key.
	SealedPrivateKey string
	CreatedAt        time.Time
}

// IdentityStore keeps the instance's domains and DID verification methods.
type IdentityStore interface {
	// ListDomains returns every domain, the primary first, then by
	// creation.
	ListDomains(ctx context.Context) ([]Domain, error)
	// GetDomain returns one domain, or ErrNotFound.
	GetDomain(ctx context.Context, id string) (Domain, error)
	// CreateDomain stores a domain. ErrConflict when its URL is taken, or
	// when it is primary and a primary exists.
	CreateDomain(ctx context.Context, d Domain) error
	// DeleteDomain removes a domain that is not primary: ErrNotFound when
	// absent, ErrPrimaryDomain when it is the primary.
	DeleteDomain(ctx context.Context, id string) error
	// SetPrimaryDomain makes the domain primary and the previous primary
	// not, in one transaction; ErrNotFound when absent.
	SetPrimaryDomain(ctx context.Context, id string, at time.Time) error

	// ListVerificationMethods returns every method by fragment.
	ListVerificationMethods(ctx context.Context) ([]VerificationMethod, error)
	// CreateVerificationMethod stores a method; ErrConflict when its
	// fragment is taken.
	CreateVerificationMethod(ctx context.Context, m VerificationMethod) error
	// DeleteVerificationMethod removes a method; ErrNotFound when absent.
	DeleteVerificationMethod(ctx context.Context, fragment string) error
}
