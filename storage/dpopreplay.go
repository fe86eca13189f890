package storage

import (
	"context"
	"time"
)

// DPoPReplayStore remembers the DPoP proofs accepted recently, for every
// instance sharing the database: a proof one instance accepted is refused
// by the others until it expires. Proofs are identified by an opaque hash
// the caller computes (the oauth package: SHA-256 of the key thumbprint
// and the jti).
type DPoPReplayStore interface {
	// RememberDPoPProof records the proof hash until expires, in one
	// statement, and reports whether it was new: false when the hash is
	// already recorded with an expiry after now (a replay). An expired
	// record is replaced. Of concurrent calls with one hash, from any
	// number of processes, at most one reports true.
	RememberDPoPProof(ctx context.Context, hash []byte, expires, now time.Time) (bool, error)
	// PurgeDPoPProofs forgets the proofs that expired before t and returns
	// how many.
	PurgeDPoPProofs(ctx context.Context, before time.Time) (int64, error)
}
