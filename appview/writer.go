package appview

import (
	"context"
	"encoding/json"
	"time"

	"github.com/lexview/lexview/appview/internal/core/indexer"
	"github.com/lexview/lexview/storage"
)

// Writer is the App's batch writer (App.Writer). Every record change goes
// through it: live ingestion, backfill, procedures and an embedder's own.
// Each change is checked (its identifiers, then its record against the
// collection's record lexicon), run through the record-event scripts and
// Config.RecordHooks, and committed with others in one transaction, as an
// idempotent upsert or delete ordered by repository revision.
//
// The writer accepts changes once the App is started (Start or
// StartWriting): before, its methods return ErrNotStarted at once, and
// ErrStopped once Shutdown has begun. The App starts and stops it.
type Writer struct{ w *indexer.Writer }

// ErrNotStarted is returned at once by the Writer before the App is
// started (Start, StartWriting, Serve or Run).
var ErrNotStarted = indexer.ErrNotStarted

// ErrStopped is returned by the Writer once the App's Shutdown has begun.
var ErrStopped = indexer.ErrStopped

// WriteResult reports what the writer did with a submission's changes.
type WriteResult struct {
	// Accepted counts the changes that passed the checks: committed when
	// Write returns (but for those below), queued for the next batch when
	// Submit returns.
	Accepted int
	// Rejected lists the changes the checks refused; they are not stored.
	Rejected []Rejection
	// Flagged lists, among the Accepted, the records their lexicon
	// refuses that are stored anyway with that error, because their
	// collection's validation mode is flag or hide (the default; see
	// docs/ingestion.md#validation).
	Flagged []Rejection
	// Of the Accepted, known once they are committed (Write and
	// WriteBulk; Submit leaves them empty): Skipped counts the changes a
	// record-event script or a RecordHook chose not to store, and
	// ScriptFailed lists those whose record-event script failed. Those
	// are not stored either: each is retried automatically and becomes a
	// dead letter when every attempt failed (Config.Scripts.Retry).
	Skipped      int
	ScriptFailed []Rejection
}

// Rejection is a change the writer did not store.
type Rejection struct {
	// URI is the change's AT URI.
	URI string
	// Err says why: the record's lexicon validation error,
	// lexicon.ErrNoRecordLexicon when its collection has no record
	// lexicon, or a malformed identifier or record text (Rejected); the
	// script's error (ScriptFailed).
	Err error
}

// WriterStats are the writer's running totals since the App started.
type WriterStats struct {
	Queued       int       `json:"queued"`                  // submissions waiting
	Committed    int64     `json:"committed"`               // changes committed
	Rejected     int64     `json:"rejected"`                // changes refused by the checks
	Flagged      int64     `json:"flagged"`                 // invalid records stored with their validation error
	Batches      int64     `json:"batches"`                 // transactions committed
	LastCommitAt time.Time `json:"last_commit_at,omitzero"` // zero before the first
}

// Write checks changes, queues the valid ones and waits until they are
// committed (or ctx ends). source names the writer's caller in metrics and
// logs ("my-importer").
func (w *Writer) Write(ctx context.Context, source string, changes []storage.Change) (WriteResult, error) {
	return writeResult(w.w.Write(ctx, source, changes))
}

// WriteBulk is Write for bulk work (an import of many records): its
// submissions wait in a short queue of their own and fill batches after
// live changes, so that they add little to live ingestion's lag.
func (w *Writer) WriteBulk(ctx context.Context, source string, changes []storage.Change) (WriteResult, error) {
	return writeResult(w.w.WriteBulk(ctx, source, changes))
}

// Submit is Write that returns once the valid changes are queued, without
// waiting for their commit. It blocks while the queue is full.
func (w *Writer) Submit(ctx context.Context, source string, changes []storage.Change) (WriteResult, error) {
	return writeResult(w.w.Submit(ctx, source, changes, nil))
}

// CheckRecord reports why a record of collection would be refused by the
// lexicon validation every write meets (nil when it would not), without
// writing it.
func (w *Writer) CheckRecord(collection string, record json.RawMessage) error {
	return w.w.CheckRecord(collection, record)
}

// Stats returns the writer's running totals.
func (w *Writer) Stats() WriterStats { return WriterStats(w.w.Stats()) }

func writeResult(res indexer.Result, err error) (WriteResult, error) {
	out := WriteResult{Accepted: res.Accepted, Skipped: res.Skipped}
	for _, r := range res.Rejected {
		out.Rejected = append(out.Rejected, Rejection(r))
	}
	for _, r := range res.Flagged {
		out.Flagged = append(out.Flagged, Rejection(r))
	}
	for _, r := range res.ScriptFailed {
		out.ScriptFailed = append(out.ScriptFailed, Rejection(r))
	}
	return out, err
}
