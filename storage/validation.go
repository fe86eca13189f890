package storage

import (
	"context"
	"time"
)

// Records a lexicon refuses may be stored with their validation error
// (Record.Invalid) instead of being dropped: the validation modes flag and
// hide (docs/ingestion.md#validation). The store keeps the error in a
// nullable column that only flagged records fill, counts the flagged
// records per collection and reason, and keeps the progress of the
// background re-validation that follows a revision of a lexicon.

// MaxInvalidReason bounds the validation error stored with a record, in
// bytes; a longer one is cut (at a character boundary).
const MaxInvalidReason = 500

// InvalidCount is the number of stored records of one collection flagged
// with one validation error.
type InvalidCount struct {
	Collection string `json:"collection"`
	Reason     string `json:"reason"`
	Count      int64  `json:"count"`
}

// Revalidation is one stored record's new validation outcome: Invalid is
// its validation error, "" when it is now valid.
type Revalidation struct {
	URI string
	// CID is the version validated: a record rewritten since (another
	// CID) is left as its writer stored it.
	CID     string
	Invalid string
}

// ValidationPass is the progress of the re-validation of one collection's
// stored records against a revision of its lexicon. It walks the
// collection's listing (newest created first) from After.
type ValidationPass struct {
	Collection string    `json:"collection"`
	Revision   int       `json:"revision"`   // the lexicon revision validated against
	After      *Position `json:"-"`          // where the pass resumes; nil at the start
	Checked    int64     `json:"checked"`    // records validated so far
	Flagged    int64     `json:"flagged"`    // records that became invalid
	Cleared    int64     `json:"cleared"`    // records that became valid
	Done       bool      `json:"done"`       // every record stored when it started was validated
	StartedAt  time.Time `json:"started_at"` // when the pass (of this revision) began
	UpdatedAt  time.Time `json:"updated_at"` // the last step
}

// ValidationStore keeps what validation decided about stored records.
type ValidationStore interface {
	// InvalidRecordCounts counts the stored records flagged with a
	// validation error, per collection and reason, the largest counts
	// first; at most limit rows (limit <= 0: every row).
	InvalidRecordCounts(ctx context.Context, limit int) ([]InvalidCount, error)
	// SetRecordValidation stores the outcomes of a re-validation: each
	// record still at its CID gets its new validation error (NULL when
	// valid). It returns how many records changed from valid to invalid
	// and from invalid to valid.
	SetRecordValidation(ctx context.Context, outcomes []Revalidation) (flagged, cleared int64, err error)
	// PutValidationPass stores the progress of a re-validation pass,
	// replacing the collection's previous one.
	PutValidationPass(ctx context.Context, p ValidationPass) error
	// ValidationPasses returns every stored pass, by collection.
	ValidationPasses(ctx context.Context) ([]ValidationPass, error)
}
