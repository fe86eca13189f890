package appview

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/lexview/lexview/appview/internal/core/cluster"
	"github.com/lexview/lexview/appview/internal/core/history"
	"github.com/lexview/lexview/storage"
)

// historyTimeout bounds the database round trips of one history sample.
const historyTimeout = 2 * time.Second

// historyBlob is the stored blob (SettingsStore) holding the day window
// of the history of the leading instance, as JSON (history.Saved).
const historyBlob = "history.day"

// newHistory makes the history of the instance's figures behind the
// dashboard's charts and status indicator (GET /admin/stats/history and
// /admin/stats/health), sampled by the "history" component every
// Metrics.HistoryInterval. Its day window is stored at each of its points
// and restored at start (runHistory).
func (a *App) newHistory() *history.History {
	return history.New(history.Options{Read: a.reading, Now: a.cfg.Now, Interval: a.cfg.Metrics.HistoryInterval,
		Save: a.saveHistory})
}

// runHistory restores the stored day window, then samples until ctx ends.
func (a *App) runHistory(ctx context.Context) {
	b, err := a.store.GetBlob(ctx, historyBlob)
	switch {
	case errors.Is(err, storage.ErrNotFound):
	case err != nil:
		a.log.Warn("reading the stored history failed; the day's charts start empty", "err", err)
	default:
		var s history.Saved
		if err := json.Unmarshal(b.Data, &s); err != nil {
			a.log.Warn("the stored history is unreadable; the day's charts start empty", "err", err)
			break
		}
		a.history.Restore(s)
	}
	a.history.Run(ctx)
}

// saveHistory stores the day window s, on the leading instance only: it
// runs the event sources, whose figures the charts follow (instances
// sharing a database would otherwise overwrite one another's).
func (a *App) saveHistory(ctx context.Context, s history.Saved) {
	if !a.leadership.State().Leading {
		return
	}
	raw, err := json.Marshal(s)
	if err != nil {
		a.log.Warn("storing the history failed", "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, historyTimeout)
	defer cancel()
	if err := a.store.PutBlob(ctx, historyBlob, storage.Blob{ContentType: "application/json", Data: raw, UpdatedAt: a.cfg.Now()}); err != nil && ctx.Err() == nil {
		a.log.Warn("storing the history failed", "err", err)
	}
}

// reading reads the figures the history follows: the event sources', the
// writer's, the XRPC calls', the event log's warnings and errors, the
// backfill jobs' and a database round trip.
func (a *App) reading(ctx context.Context) history.Reading {
	r := history.Reading{Leading: a.leadership.State().Leading, Calls: a.calls.Read(), Problems: a.events.Problems()}
	for _, src := range a.sources {
		st := src.Status()
		r.Sources = append(r.Sources, history.Source{Name: src.Name(), State: st.State, Events: st.Events, Lag: st.Lag,
			LastError: st.LastError})
	}
	ws := a.writer.Stats()
	r.Writer = history.Writer{Committed: ws.Committed, Refused: ws.Rejected, Queued: ws.Queued}

	ctx, cancel := context.WithTimeout(ctx, historyTimeout)
	defer cancel()
	start := time.Now()
	r.Database = a.pingDatabase(ctx)
	r.Ping = time.Since(start)
	if a.backfill != nil {
		if sum, err := a.backfill.Summary(ctx); err == nil {
			r.Backfill = history.Backfill{Current: historyJob(sum.Current), LastFinished: historyJob(sum.LastFinished), Waiting: sum.Waiting}
		}
	}
	return r
}

// pingDatabase makes one small read of the database: the leader's lease,
// as GET /ready does.
func (a *App) pingDatabase(ctx context.Context) error {
	if _, err := a.store.GetLease(ctx, cluster.DefaultLeaseName); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	return nil
}

// historyJob is a backfill job as the history follows it.
func historyJob(j *storage.BackfillJob) *history.Job {
	if j == nil {
		return nil
	}
	out := &history.Job{ID: j.ID, Status: j.Status, Stage: j.Stage, TotalRepos: -1, Error: j.Error, StartedAt: j.StartedAt,
		ProcessedRepos: deref(j.ProcessedRepos), Records: deref(j.TotalRecords)}
	if j.TotalRepos != nil && j.Stage != storage.StagePending && j.Stage != storage.StageDiscovering {
		out.TotalRepos = *j.TotalRepos
	}
	return out
}

func deref(n *int64) int64 {
	if n == nil {
		return 0
	}
	return *n
}
