package appview

import (
	"context"
	"time"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/indexer"
	"github.com/lexview/lexview/appview/internal/core/metrics"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
)

// Pacing of the re-validation of stored records after a lexicon revision:
// the leader looks for revised record lexicons every revalidateCheck, and
// a pass validates revalidateStep records per transaction, then pauses, so
// that it never holds the writer for long; a failed step is tried again
// after revalidateRetry.
const (
	revalidateCheck    = 2 * time.Second
	revalidateStep     = 500
	revalidatePause    = 5 * time.Millisecond
	revalidateRetry    = 30 * time.Second
	eventRevalidated   = "validation.revalidated"
	eventRevalidateRun = "validation.revalidating"
)

// runRevalidation re-validates the stored records of every collection
// whose record lexicon was revised, against the revision the lexicon
// snapshot holds, until ctx ends. The leader runs it. A record that became
// valid loses its validation error; one that became invalid gets it (and
// is hidden where the collection's mode hides). A pass's progress is
// stored after every step (validation_passes), so it resumes after a
// restart or a change of leader; a newer revision restarts it from the
// newest record.
//
// A collection seen for the first time (no stored pass: a new lexicon, or
// the first start of a version with re-validation) gets a finished pass at
// its current revision without a scan: its records were validated when
// they were written.
func (a *App) runRevalidation(ctx context.Context) {
	passes := map[string]storage.ValidationPass{}
	loaded := false
	for {
		if !loaded {
			stored, err := a.store.ValidationPasses(ctx)
			if err == nil {
				loaded = true
				for _, p := range stored {
					passes[p.Collection] = p
				}
			} else if ctx.Err() == nil {
				a.log.Warn("reading the re-validation passes failed; trying again", "err", err, "retry_in", revalidateRetry)
			}
		}
		if loaded {
			a.revalidateDue(ctx, passes)
		}
		if !sleep(ctx, revalidateCheck) {
			return
		}
	}
}

// revalidateDue runs the passes due: those of collections whose lexicon
// revision differs from their pass's, and the unfinished ones.
func (a *App) revalidateDue(ctx context.Context, passes map[string]storage.ValidationPass) {
	snap := a.lexicons.Snapshot()
	for _, coll := range snap.RecordCollections() {
		lex, ok := snap.Get(coll)
		if !ok || ctx.Err() != nil {
			continue
		}
		p, seen := passes[coll]
		now := a.cfg.Now()
		switch {
		case !seen:
			p = storage.ValidationPass{Collection: coll, Revision: lex.Revision, Done: true, StartedAt: now, UpdatedAt: now}
		case p.Revision != lex.Revision:
			p = storage.ValidationPass{Collection: coll, Revision: lex.Revision, StartedAt: now, UpdatedAt: now}
			a.log.Info("re-validating the stored records after a lexicon revision", "collection", coll, "revision", lex.Revision)
			a.events.Record(ctx, eventlog.Entry{Type: eventRevalidateRun, Subject: coll, Detail: map[string]any{"revision": lex.Revision}})
		case p.Done:
			continue
		}
		if !p.Done {
			var err error
			if p, err = a.revalidate(ctx, snap, p); err != nil {
				if ctx.Err() == nil {
					a.log.Warn("re-validating stored records failed; trying again", "collection", coll, "err", err, "retry_in", revalidateRetry)
					sleep(ctx, revalidateRetry)
				}
				continue
			}
		} else if err := a.store.PutValidationPass(ctx, p); err != nil {
			continue
		}
		passes[coll] = p
	}
}

// revalidate runs pass p of its collection against snap until it is done,
// the lexicon is revised again or ctx ends, storing its progress after
// every step, and returns it as it stopped.
func (a *App) revalidate(ctx context.Context, snap *lexicon.Snapshot, p storage.ValidationPass) (storage.ValidationPass, error) {
	for !p.Done {
		if l, ok := a.lexicons.Snapshot().Get(p.Collection); !ok || l.Revision != p.Revision {
			return p, nil // revised again (or gone): the next check starts over
		}
		page, err := a.store.ListRecords(ctx, storage.ListQuery{Collection: p.Collection, Limit: revalidateStep, After: p.After})
		if err != nil {
			return p, err
		}
		var outcomes []storage.Revalidation
		if a.validation.mode(p.Collection) != indexer.ModeOff { // off: the flags stay as they were
			outcomes = make([]storage.Revalidation, 0, len(page.Records))
			for _, r := range page.Records {
				o := storage.Revalidation{URI: r.URI, CID: r.CID}
				if err := snap.ValidateRecord(p.Collection, r.Value); err != nil {
					o.Invalid = indexer.ClipReason(err.Error())
				}
				if o.Invalid != r.Invalid {
					outcomes = append(outcomes, o)
				}
			}
		}
		flagged, cleared, err := a.store.SetRecordValidation(ctx, outcomes)
		if err != nil {
			return p, err
		}
		p.Checked += int64(len(page.Records))
		p.Flagged += flagged
		p.Cleared += cleared
		p.After = page.Next
		p.Done = page.Next == nil
		p.UpdatedAt = a.cfg.Now()
		if err := a.store.PutValidationPass(ctx, p); err != nil {
			return p, err
		}
		if !p.Done && !sleep(ctx, revalidatePause) {
			return p, ctx.Err()
		}
	}
	a.log.Info("the stored records are re-validated", "collection", p.Collection, "revision", p.Revision,
		"records", p.Checked, "flagged", p.Flagged, "cleared", p.Cleared)
	a.events.Record(ctx, eventlog.Entry{Type: eventRevalidated, Subject: p.Collection, Detail: map[string]any{
		"revision": p.Revision, "records": p.Checked, "flagged": p.Flagged, "cleared": p.Cleared,
		"seconds": p.UpdatedAt.Sub(p.StartedAt).Seconds()}})
	return p, nil
}

// validationState reads the flagged records and the passes for the
// metrics, within a scrape's patience.
func (a *App) validationState() (metrics.ValidationState, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts, err := a.store.InvalidRecordCounts(ctx, 0)
	if err != nil {
		return metrics.ValidationState{}, false
	}
	passes, err := a.store.ValidationPasses(ctx)
	if err != nil {
		return metrics.ValidationState{}, false
	}
	st := metrics.ValidationState{Invalid: map[string]int64{}}
	for _, c := range counts {
		st.Invalid[c.Collection] += c.Count
	}
	for _, p := range passes {
		st.Passes = append(st.Passes, metrics.ValidationPass{Collection: p.Collection, Checked: p.Checked, Done: p.Done})
	}
	return st, true
}
