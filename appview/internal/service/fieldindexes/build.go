package fieldindexes

import (
	"context"
	"fmt"
	"time"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/storage"
)

// BuildPacing paces the background build: Step records per transaction
// (storage.FieldIndexStore.BuildFieldIndexes), then a Pause, so that the
// build never holds the writer for long and live ingestion keeps its
// pace.
type BuildPacing struct {
	Step  int           // records per step; default 500
	Pause time.Duration // between steps; default 5 ms
	// Retry is the wait after a failed step; default 30 s.
	Retry time.Duration
	// Recheck is how often the build looks for work without being woken:
	// indexes declared or dropped through another instance; default 30 s.
	Recheck time.Duration
}

// The defaults of BuildPacing, and idle, the wait after a step that found
// work it could not advance (another instance holds it).
const (
	DefaultBuildStep    = 500
	DefaultBuildPause   = 5 * time.Millisecond
	DefaultBuildRetry   = 30 * time.Second
	DefaultBuildRecheck = 30 * time.Second
	idle                = time.Second
)

func (p BuildPacing) withDefaults() BuildPacing {
	if p.Step <= 0 {
		p.Step = DefaultBuildStep
	}
	if p.Pause <= 0 {
		p.Pause = DefaultBuildPause
	}
	if p.Retry <= 0 {
		p.Retry = DefaultBuildRetry
	}
	if p.Recheck <= 0 {
		p.Recheck = DefaultBuildRecheck
	}
	return p
}

// Wake makes the build look for work now: an index was declared or
// dropped (here, or through another instance: the change feed). It never
// blocks; on an instance that does not run the build it does nothing.
func (s *Service) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run builds the declared indexes until ctx ends: whatever is pending at
// once (a build resumes where it stopped, after a restart or a change of
// leader), then whenever Wake is called, and every BuildPacing.Recheck.
// The leader runs it: one instance builds.
func (s *Service) Run(ctx context.Context) {
	tick := time.NewTicker(s.opt.Build.Recheck)
	defer tick.Stop()
	for {
		s.build(ctx)
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-tick.C:
		}
	}
}

// build advances the pending work step by step until none is left (or ctx
// ends), logging when it starts and ends, and recording each index that
// becomes ready or fails.
func (s *Service) build(ctx context.Context) {
	var started time.Time
	var records int64
	p := s.opt.Build
	for {
		prog, err := s.opt.Store.BuildFieldIndexes(ctx, p.Step)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			s.log.Warn("building field indexes failed; trying again", "err", err, "retry_in", p.Retry)
			if !sleep(ctx, p.Retry) {
				return
			}
			continue
		}
		if prog.Processed > 0 && started.IsZero() {
			started = s.opt.Now()
			s.logStart(ctx)
		}
		records += int64(prog.Processed)
		for _, f := range prog.Finished {
			s.finished(ctx, f)
		}
		if !prog.Pending {
			if !started.IsZero() {
				s.log.Info("field index build finished", "records", records, "took", s.opt.Now().Sub(started).Round(time.Millisecond))
			}
			return
		}
		pause := p.Pause
		if prog.Processed == 0 && len(prog.Finished) == 0 {
			pause = idle
		}
		if !sleep(ctx, pause) {
			return
		}
	}
}

// logStart logs the indexes a build starts on.
func (s *Service) logStart(ctx context.Context) {
	list, err := s.opt.Store.ListFieldIndexes(ctx, "")
	if err != nil {
		s.log.Info("field index build started")
		return
	}
	var building []string
	for _, f := range list {
		if f.State == storage.FieldIndexBuilding {
			building = append(building, fmt.Sprintf("%s:%s (%s, %d of %d records)", f.Collection, f.Path, f.Kind, f.Done, f.Total))
		}
	}
	s.log.Info("field index build started", "building", building)
}

// finished records an index that became ready or failed.
func (s *Service) finished(ctx context.Context, f storage.FieldIndex) {
	d := detail(f)
	d["records"] = f.Done
	d["seconds"] = f.UpdatedAt.Sub(f.CreatedAt).Seconds()
	switch f.State {
	case storage.FieldIndexReady:
		s.log.Info("field index ready", "collection", f.Collection, "path", f.Path, "kind", f.Kind, "records", f.Done)
		s.record(ctx, eventlog.Entry{Type: "field_index.ready", Subject: f.Collection, Detail: d})
	case storage.FieldIndexFailed:
		d["error"] = f.Error
		s.log.Error("field index build failed", "collection", f.Collection, "path", f.Path, "kind", f.Kind, "err", f.Error)
		s.record(ctx, eventlog.Entry{Type: "field_index.failed", Severity: eventlog.Error, Subject: f.Collection, Detail: d})
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
