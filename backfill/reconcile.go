package backfill

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lexview/lexview/storage"
)

// Reconciliation: a backfill also removes the records Lexview holds that
// the repository no longer holds. After a collection's listing completed
// (every page of listRecords read, every page written), the records of that
// repository and collection that Lexview holds and the listing lacked are
// deleted through the Writer, as live deletes are, carrying the revision
// read before the listing (rev). A stored record is removed only when it
// cannot have been written after the listing began:
//
//   - a record with a revision is removed when that revision is at most
//     rev: it existed at or before rev, and a listing taken after rev no
//     longer shows it, so it was deleted since. A record written live
//     after the listing began has a newer revision and stays. The store
//     enforces the same rule when it applies the delete (a delete carrying
//     a revision removes only versions at that revision or older), so a
//     live write landing between this check and the delete is safe too.
//   - a record without a revision (imported, or written by a procedure
//     whose PDS gave none) is removed when it was indexed more than
//     clockMargin before the listing began.
//
// Nothing is removed when the listing did not complete (an error, a pause
// or a cancel part-way), when the repository's revision could not be read
// (getLatestCommit failed: the revision guard would be missing), or when
// the listing named a record outside the repository and collection asked
// for or repeated its cursor (a listing this code does not understand is
// not evidence of deletion).

// clockMargin is how long before the listing began a record without a
// revision must have been indexed to be removed: it absorbs clock steps
// between the processes that index.
const clockMargin = time.Minute

// reconcilePage is how many stored versions are read at a time, and
// reconcileBatch how many deletes are handed to the Writer at once.
const (
	reconcilePage  = 500
	reconcileBatch = 100
)

// listing is what a complete listRecords of one collection of one
// repository showed.
type listing struct {
	did, collection string
	rev             string              // the repository's revision read before the listing; "" when unknown
	started         time.Time           // when the repository's fetch began (before reading rev)
	keys            map[string]struct{} // record keys listed
	doubtful        bool                // a listed record named another repository or collection, or the cursor stuck
	// gone says the account is deleted or taken down: the repository holds
	// nothing, and each stored record is deleted at its own revision, so
	// that a record the account writes again later (reinstated after a
	// takedown) is not kept out.
	gone bool
}

// see notes a listed record's AT URI, returning its record key when it
// names the listing's repository and collection.
func (l *listing) see(uri string) (string, bool) {
	rkey, ok := strings.CutPrefix(uri, "at://"+l.did+"/"+l.collection+"/")
	if !ok || !validRecordKey(rkey) {
		l.doubtful = true
		return "", false
	}
	l.keys[rkey] = struct{}{}
	return rkey, true
}

// stale reports whether a stored record the listing lacks is to be removed.
func (l *listing) stale(rec storage.RecordVersion) bool {
	if _, listed := l.keys[rec.RKey]; listed {
		return false
	}
	if rec.Rev != "" {
		return l.gone || rec.Rev <= l.rev
	}
	return rec.IndexedAt.Before(l.started.Add(-clockMargin))
}

// reconcile deletes the stored records of the listing's repository and
// collection that the complete listing l lacks, and returns how many
// deletes it wrote. A store or writer failure is systemic.
func (r *run) reconcile(ctx context.Context, l *listing) (int64, error) {
	if l.rev == "" && !l.gone || l.doubtful {
		return 0, nil
	}
	var deleted int64
	batch := make([]storage.Change, 0, reconcileBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := r.m.cfg.Writer.WriteBulk(ctx, Source, batch); err != nil {
			return &systemicError{"write reconciled deletes", err}
		}
		deleted += int64(len(batch))
		batch = batch[:0]
		return nil
	}
	after := ""
	for {
		page, err := r.m.cfg.Store.ListRecordVersions(ctx, l.did, l.collection, after, reconcilePage)
		if err != nil {
			return deleted, &systemicError{"read stored records", err}
		}
		for _, rec := range page {
			if !l.stale(rec) {
				continue
			}
			rev := l.rev
			if l.gone {
				rev = rec.Rev
			}
			batch = append(batch, storage.Change{
				Op: storage.OpDelete, DID: l.did, Collection: l.collection, RKey: rec.RKey, Rev: rev,
			})
			if len(batch) == reconcileBatch {
				if err := flush(); err != nil {
					return deleted, err
				}
			}
		}
		if len(page) < reconcilePage {
			break
		}
		after = page[len(page)-1].RKey
	}
	if err := flush(); err != nil {
		return deleted, err
	}
	if deleted > 0 {
		r.log.Info("backfill: removed records the repository no longer holds",
			"did", l.did, "collection", l.collection, "rev", l.rev, "deleted", deleted)
	}
	return deleted, nil
}

// systemicError is a failure of the store or the batch writer: not the
// fault of one repository, it fails the job.
type systemicError struct {
	op  string
	err error
}

func (e *systemicError) Error() string { return fmt.Sprintf("%s: %v", e.op, e.err) }
func (e *systemicError) Unwrap() error { return e.err }

// purgeGone removes the stored records of the wanted collections of an
// account its PDS reports deleted or taken down (fetch began at started):
// what a complete listing of an empty repository would remove, each
// record deleted at its own revision (see listing.gone).
func (r *run) purgeGone(ctx context.Context, did string, started time.Time) (int64, error) {
	var total int64
	for _, c := range r.collections {
		n, err := r.reconcile(ctx, &listing{did: did, collection: c, started: started, keys: map[string]struct{}{}, gone: true})
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}
