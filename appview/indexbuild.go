package appview

import (
	"context"
	"time"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/metrics"
)

// Pacing of the link index's background pass over the records stored
// before it existed: linkPassStep records per transaction, then a pause,
// so that the pass never holds the writer for long and live ingestion
// keeps its pace; a failed step is tried again after linkPassRetry.
const (
	linkPassStep    = 500
	linkPassPause   = 5 * time.Millisecond
	linkPassRetry   = 30 * time.Second
	eventLinksBuilt = "links.indexed"
)

// runLinkPass indexes the links of the records stored before the link
// index existed (storage.LinkStore.IndexStoredLinks) until none is left,
// then returns. The leader runs it; it resumes where it stopped after a
// restart or a change of leader. A failed step is tried again later.
func (a *App) runLinkPass(ctx context.Context) {
	st, err := a.store.LinkIndexStatus(ctx)
	if err != nil {
		if ctx.Err() == nil {
			a.log.Warn("reading the link index status failed", "err", err)
		}
		return
	}
	if st.Done {
		return
	}
	a.log.Info("indexing the links of the records stored before the link index", "scanned", st.Scanned)
	start := time.Now()
	for {
		done, err := a.store.IndexStoredLinks(ctx, linkPassStep)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			a.log.Warn("indexing stored links failed; trying again", "err", err, "retry_in", linkPassRetry)
			if !sleep(ctx, linkPassRetry) {
				return
			}
			continue
		case done:
			st, _ := a.store.LinkIndexStatus(ctx)
			a.log.Info("the links of the stored records are indexed", "records", st.Scanned, "took", time.Since(start).Round(time.Millisecond))
			a.events.Record(ctx, eventlog.Entry{Type: eventLinksBuilt, Detail: map[string]any{
				"records": st.Scanned, "seconds": time.Since(start).Seconds()}})
			return
		}
		if !sleep(ctx, linkPassPause) {
			return
		}
	}
}

// sleep waits d or until ctx ends, and reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// linkIndexState reads the link index's state for the metrics, within a
// scrape's patience.
func (a *App) linkIndexState() (metrics.LinkIndexState, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := a.store.LinkIndexStatus(ctx)
	if err != nil {
		return metrics.LinkIndexState{}, false
	}
	return metrics.LinkIndexState{Done: st.Done, Scanned: st.Scanned, Skipped: st.Skipped}, true
}
