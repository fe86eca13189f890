package backfill

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/internal/repocar"
	"github.com/lexview/lexview/storage"
)

// Backfill by CAR: a repository is fetched whole with
// com.atproto.sync.getRepo and believed only once verified (package
// repocar: every block's hash, the commit's signature against the
// account's #atproto key, the MST under the signed root). Its records of
// the wanted collections are written carrying the commit's rev, and the
// stored records of those collections the export lacks are removed as
// after a complete listing (reconcile.go). A PDS that refuses getRepo
// (notImplemented) is listed with listRecords instead, and the
// repository's row records which method fetched it. An export that fails
// verification fails the repository: it is not listed instead, since
// listRecords proves nothing.
//
// Ordering with live events is the store's revision rule: every change
// carries the repository's rev and a stored record is replaced or removed
// only by a change of the same or a newer rev, so a live event newer than
// the export, whether it arrived before or after, is never overwritten by
// it, and a live event older than the export loses to it.

// The fetch methods a job can be set to use (SettingFetch).
const (
	// SettingFetch selects how repositories are fetched: FetchCAR (the
	// default) or FetchListRecords.
	SettingFetch = "backfill.fetch"
	// FetchCAR fetches whole repositories with getRepo and verifies them,
	// falling back to listRecords for a PDS that refuses getRepo.
	FetchCAR = storage.FetchCAR
	// FetchListRecords lists the wanted collections with listRecords:
	// less transfer for a few small collections in large repositories,
	// but nothing is verified.
	FetchListRecords = storage.FetchListRecords
)

// Defaults of the getRepo bounds (Options.MaxRepoSize, Options.RepoTimeout).
const (
	DefaultMaxRepoSize = 256 << 20
	DefaultRepoTimeout = 5 * time.Minute
)

// carBatch is how many records of an export are handed to the Writer at
// once.
const carBatch = 500

// fetchMethod reads SettingFetch: FetchCAR unless set to FetchListRecords.
func (r *run) fetchMethod(ctx context.Context) string {
	v, err := r.m.cfg.Store.GetSetting(ctx, SettingFetch)
	switch strings.TrimSpace(v) {
	case FetchListRecords:
		return FetchListRecords
	case "", FetchCAR:
	default:
		if err == nil {
			r.log.Warn("backfill: unknown fetch method; using car", "key", SettingFetch, "value", v)
		}
	}
	return FetchCAR
}

// fetchRepo fetches and writes a repository's records of every wanted
// collection, by CAR or by listing as the run is set to.
func (r *run) fetchRepo(ctx context.Context, did, pds string) (counts, error) {
	if r.method == FetchCAR {
		n, err := r.fetchByCAR(ctx, did, pds)
		if err == nil || !notImplemented(err) {
			return n, err
		}
		r.log.Info("backfill: the PDS refuses getRepo; listing records instead", "did", did, "pds", pds, "err", err)
	}
	return r.fetchByListing(ctx, did, pds)
}

// fetchByCAR fetches did's repository from pds as a verified CAR export
// and writes the records of the wanted collections.
func (r *run) fetchByCAR(ctx context.Context, did, pds string) (counts, error) {
	n, _, err := r.fetchByCARRev(ctx, did, pds)
	return n, err
}

// fetchByCARRev is fetchByCAR, also returning the export's revision.
func (r *run) fetchByCARRev(ctx context.Context, did, pds string) (counts, string, error) {
	total := counts{method: FetchCAR}
	if err := r.checkpoint(ctx); err != nil {
		return total, "", err
	}
	account, err := syntax.ParseDID(did)
	if err != nil {
		return total, "", fmt.Errorf("getRepo: %w", err)
	}
	// The wall clock, as records' indexed_at: before the export is read.
	started := time.Now()
	var export *repocar.Repo
	err = r.m.http.stream(ctx, pds, "com.atproto.sync.getRepo", url.Values{"did": {did}}, "application/vnd.ipld.car",
		r.m.cfg.RepoTimeout, func(body io.Reader) error {
			var err error
			export, err = repocar.Load(ctx, body, account, r.m.cfg.MaxRepoSize, r.m.cfg.Directory)
			return err
		})
	if err != nil {
		return total, "", err
	}
	downloaded(ctx)
	rev := export.Rev()
	listings := make(map[string]*listing, len(r.collections))
	for _, c := range r.collections {
		listings[c] = &listing{did: did, collection: c, rev: rev, started: started, keys: map[string]struct{}{}}
	}
	w := r.writes(ctx)
	batch := make([]storage.Change, 0, carBatch)
	walkErr := export.Records(ctx, func(c string) bool { return listings[c] != nil }, func(rec repocar.Record) error {
		l := listings[rec.Collection]
		if !validRecordKey(rec.RKey) {
			l.doubtful = true
			return nil
		}
		l.keys[rec.RKey] = struct{}{}
		value, err := rec.JSON()
		if err != nil {
			// Counted as seen (it exists), not written: the record is not
			// atproto data this instance can store.
			r.log.Warn("backfill: a record of the export is not valid atproto data", "did", did,
				"collection", rec.Collection, "rkey", rec.RKey, "err", err)
			return nil
		}
		batch = append(batch, storage.Change{
			Op: storage.OpCreate, DID: did, Collection: rec.Collection, RKey: rec.RKey, CID: rec.CID.String(), Rev: rev, Record: value,
		})
		total.fetched++
		if len(batch) < carBatch {
			return nil
		}
		if err := r.checkpoint(ctx); err != nil {
			return err
		}
		err = w.add(batch)
		batch = make([]storage.Change, 0, carBatch)
		return err
	})
	if walkErr == nil {
		walkErr = w.add(batch)
	}
	if err := errors.Join(w.wait(), walkErr); err != nil {
		return total, rev, err
	}
	// Every wanted record of the export is written: reconcile.
	for _, c := range slices.Sorted(maps.Keys(listings)) {
		deleted, err := r.reconcile(ctx, listings[c])
		total.deleted += deleted
		if err != nil {
			return total, rev, err
		}
	}
	return total, rev, nil
}

// ResyncResult is what Resync did.
type ResyncResult struct {
	Rev     string // the export's revision
	Records int64  // records of the record collections written
	Deleted int64  // stored records the repository no longer holds, removed
}

// Resync fetches did's whole repository from its PDS as a verified CAR
// export, now and outside any job, and writes its records of every record
// collection with the export's revision, removing the stored ones it no
// longer holds: what a live source does when it finds a gap in a
// repository's history. The revision rule keeps live changes newer than
// the export. It fails when the PDS does not offer getRepo, as nothing
// else can be verified.
func (m *Manager) Resync(ctx context.Context, did string) (ResyncResult, error) {
	r := &run{m: m, id: "resync", act: &active{stop: make(chan struct{})}, log: m.cfg.Logger.With("resync", did)}
	r.collections = m.cfg.Lexicons.Snapshot().RecordCollections()
	if len(r.collections) == 0 {
		return ResyncResult{}, nil
	}
	pds, err := r.resolve(ctx, did)
	if err != nil {
		return ResyncResult{}, err
	}
	n, rev, err := r.fetchByCARRev(ctx, did, pds)
	return ResyncResult{Rev: rev, Records: n.fetched, Deleted: n.deleted}, err
}
