package backfill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/storage"
)

// counts are what fetching a repository did: records fetched, stored
// records deleted because the repository no longer holds them, and how it
// was fetched (storage.FetchCAR or storage.FetchListRecords).
type counts struct {
	fetched, deleted int64
	method           string
}

// finishRepo records a repository's final state, counts it and tells
// subscribers.
func (r *run) finishRepo(ctx context.Context, repo storage.BackfillRepo, status string, n counts, cause error) error {
	repo.Status, repo.RecordsFetched, repo.Error, repo.FetchMethod = status, n.fetched, "", n.method
	if cause == nil {
		repo.FailureReason = ""
	} else {
		repo.Error = cause.Error()
		r.log.Warn("backfill: repository failed", "did", repo.DID, "pds", repo.PDSEndpoint, "reason", repo.FailureReason, "err", cause)
	}
	if err := r.save(ctx, repo); err != nil {
		return err
	}
	if r.m.cfg.Metrics != nil {
		r.m.cfg.Metrics.BackfillRepo(status, repo.FailureReason, int(n.fetched))
	}
	r.deleted.Add(n.deleted)
	r.m.broker.publish(Event{
		Type: EventRepoFetched, JobID: r.id, DID: repo.DID, PDSEndpoint: repo.PDSEndpoint,
		Records: n.fetched, Deleted: n.deleted, Status: status, Error: repo.Error, Reason: repo.FailureReason,
	})
	return nil
}

// save stores a repository row, fenced by the run's lease: once the lease
// is lost the run stops. A row deleted meanwhile (DELETE
// /admin/backfill/{id}/details) is not an error.
func (r *run) save(ctx context.Context, repo storage.BackfillRepo) error {
	err := r.m.cfg.Store.UpdateBackfillRepo(ctx, r.lease, repo)
	if err == nil || errors.Is(err, storage.ErrNotFound) || ctx.Err() != nil {
		return nil
	}
	if errors.Is(err, storage.ErrLeaseLost) {
		r.act.lose()
	}
	return fmt.Errorf("save repository %s: %w", repo.DID, err)
}

// resolve finds a DID's PDS endpoint.
func (r *run) resolve(ctx context.Context, raw string) (string, error) {
	did, err := syntax.ParseDID(raw)
	if err != nil {
		return "", fmt.Errorf("resolve DID: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.m.cfg.RequestTimeout)
	defer cancel()
	ident, err := r.m.cfg.Directory.LookupDID(ctx, did)
	if err != nil {
		return "", fmt.Errorf("resolve DID: %w", err)
	}
	pds := strings.TrimSuffix(ident.PDSEndpoint(), "/")
	u, err := url.Parse(pds)
	if pds == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", fmt.Errorf("resolve DID: no usable PDS endpoint in the DID document (%q)", pds)
	}
	return pds, nil
}

// fetchByListing fetches and writes a repository's records of every
// wanted collection with listRecords, and removes the stored records of
// each collection whose listing completed that the repository no longer
// holds (reconcile.go).
func (r *run) fetchByListing(ctx context.Context, did, pds string) (counts, error) {
	// The wall clock, as records' indexed_at: before the rev is read.
	started := time.Now()
	// The repository's current rev, read before listing: records listed
	// afterwards are at least that new, so live events with newer revs win
	// and tombstones keep deleted records from coming back.
	var commit struct {
		Rev string `json:"rev"`
	}
	rev := ""
	err := r.m.http.get(ctx, pds, "com.atproto.sync.getLatestCommit", url.Values{"did": {did}}, &commit)
	if err == nil {
		if _, perr := syntax.ParseTID(commit.Rev); perr == nil {
			rev = commit.Rev
		}
	} else if ctx.Err() != nil {
		return counts{}, ctx.Err()
	}
	total := counts{method: storage.FetchListRecords}
	for _, c := range r.collections {
		l := &listing{did: did, collection: c, rev: rev, started: started, keys: map[string]struct{}{}}
		n, err := r.fetchCollection(ctx, pds, l)
		total.fetched += n
		if err != nil {
			return total, err
		}
		// The listing is complete: reconcile the collection.
		deleted, err := r.reconcile(ctx, l)
		total.deleted += deleted
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

type recordPage struct {
	Cursor  string `json:"cursor"`
	Records []struct {
		URI   string          `json:"uri"`
		CID   string          `json:"cid"`
		Value json.RawMessage `json:"value"`
	} `json:"records"`
}

// writeWindow bounds the page writes of one repository in flight at once:
// enough for the concurrent repositories (8 by default, 100 records a page)
// to keep two of the writer's bulk batches of 2,000 filling (PostgreSQL).
const writeWindow = 8

// fetchCollection pages through listRecords for the listing's collection,
// noting the record keys listed in l. Writes of earlier pages overlap the
// fetches of later ones, at most writeWindow at a time. It returns how
// many records were listed, and nil only when the listing is complete and
// every page was written.
func (r *run) fetchCollection(ctx context.Context, pds string, l *listing) (int64, error) {
	did, collection, rev := l.did, l.collection, l.rev
	var n int64
	w := r.writes(ctx)
	cursor := ""
	for {
		if err := r.checkpoint(ctx); err != nil {
			return n, errors.Join(w.wait(), err)
		}
		params := url.Values{"repo": {did}, "collection": {collection}, "limit": {strconv.Itoa(r.m.cfg.PageSize)}}
		if cursor != "" {
			params.Set("cursor", cursor)
		}
		var page recordPage
		if err := r.m.http.get(ctx, pds, "com.atproto.repo.listRecords", params, &page); err != nil {
			return n, errors.Join(w.wait(), err)
		}
		changes := make([]storage.Change, 0, len(page.Records))
		for _, rec := range page.Records {
			rkey, ok := l.see(rec.URI)
			if ok && rec.CID != "" && len(rec.Value) > 0 {
				changes = append(changes, storage.Change{
					Op: storage.OpCreate, DID: did, Collection: collection, RKey: rkey, CID: rec.CID, Rev: rev, Record: rec.Value,
				})
			}
		}
		if err := w.add(changes); err != nil {
			return n, errors.Join(w.wait(), err)
		}
		n += int64(len(page.Records))
		if page.Cursor == "" || len(page.Records) == 0 || page.Cursor == cursor {
			if page.Cursor != "" && page.Cursor == cursor && len(page.Records) > 0 {
				l.doubtful = true // the PDS repeated its cursor: the listing may be cut short
			}
			return n, w.wait()
		}
		cursor = page.Cursor
	}
}

// pageWrites hands batches of record changes to the Writer in the
// background, at most writeWindow batches in flight, so that fetching
// overlaps writing.
type pageWrites struct {
	ctx      context.Context
	r        *run
	inflight []chan error
}

func (r *run) writes(ctx context.Context) *pageWrites { return &pageWrites{ctx: ctx, r: r} }

// drain waits for the oldest writes until at most keep are in flight and
// returns the first error among them.
func (w *pageWrites) drain(keep int) error {
	var first error
	for len(w.inflight) > keep {
		if err := <-w.inflight[0]; err != nil && first == nil {
			first = err
		}
		w.inflight = w.inflight[1:]
	}
	return first
}

// add starts writing changes (nothing when empty), first waiting for a
// free slot; it returns the error of a write that finished meanwhile.
func (w *pageWrites) add(changes []storage.Change) error {
	if err := w.drain(writeWindow - 1); err != nil {
		return err
	}
	if len(changes) == 0 {
		return nil
	}
	done := make(chan error, 1)
	w.inflight = append(w.inflight, done)
	go func() {
		err := w.r.m.cfg.Writer.WriteBulk(w.ctx, Source, changes)
		if err != nil {
			err = &systemicError{"write records", err}
		}
		done <- err
	}()
	return nil
}

// wait waits for every write and returns the first error.
func (w *pageWrites) wait() error { return w.drain(0) }

// validRecordKey checks the atproto record key syntax: 1 to 512 of
// A-Z a-z 0-9 . - _ : ~, and neither "." nor "..". (A hand-written check:
// this runs for every backfilled record.)
func validRecordKey(k string) bool {
	if k == "" || len(k) > 512 || k == "." || k == ".." {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '-' || c == '_' || c == ':' || c == '~') {
			return false
		}
	}
	return true
}
