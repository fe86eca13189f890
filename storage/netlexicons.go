package storage

import (
	"context"
	"time"
)

// NetworkLexicon is a lexicon fetched from its NSID's authority rather than
// uploaded: the lexicon itself is stored as any other (LexiconStore); this
// row says where it came from and when it was last fetched.
type NetworkLexicon struct {
	NSID string
	// AuthorityDID is the DID the NSID's _lexicon TXT record named.
	AuthorityDID string
	// TargetCollection is what the operator gave when adding it; "" for none.
	TargetCollection string
	// CID is the CID of the schema record last fetched.
	CID string
	// LastFetchedAt is when the schema was last fetched (changed or not).
	LastFetchedAt time.Time
	// UpstreamDeletedAt is when the authority was first seen not to publish
	// the schema any more (the lexicon stays in use); zero while it does.
	UpstreamDeletedAt time.Time
	CreatedAt         time.Time
}

// NetworkLexiconStore keeps the network lexicons' provenance rows.
type NetworkLexiconStore interface {
	// PutNetworkLexicon creates the row of n.NSID or replaces every field
	// of it but CreatedAt, which keeps its first value.
	PutNetworkLexicon(ctx context.Context, n NetworkLexicon) error
	// GetNetworkLexicon returns one row, or ErrNotFound.
	GetNetworkLexicon(ctx context.Context, nsid string) (NetworkLexicon, error)
	// ListNetworkLexicons returns every row ordered by NSID.
	ListNetworkLexicons(ctx context.Context) ([]NetworkLexicon, error)
	// DeleteNetworkLexicon removes a row, or returns ErrNotFound.
	DeleteNetworkLexicon(ctx context.Context, nsid string) error
}
