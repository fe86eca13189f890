package appview

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// component is one part of the App's background work: the writer, an
// event source, the backfill worker, a refresh loop, a sweep, the metrics
// listener. It is the one lifecycle every part follows:
//
//   - Start launches the work and returns once it runs, or with an error
//     when it cannot (then nothing of it runs). It must not block for
//     long. ctx carries values for the work and lives as long as the App's
//     background work; a component may keep it for its goroutines.
//   - Stop asks the work to end and waits until it has, or until ctx ends:
//     then it returns an error wrapping ctx.Err(), and the work may still
//     be running. Stop is called only after a successful Start, and may be
//     called again after an error, to wait longer.
//
// A loop of the form run(ctx) that returns when ctx ends becomes a
// component with worker.
type component interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// part is a named component in the App's list, and whether it runs.
type part struct {
	name string
	component
	running bool
}

// worker is a component made of a loop that returns when its context
// ends: Start runs init (when set) and then run in a goroutine with a
// context of its own; Stop cancels that context and waits for run to
// return.
type worker struct {
	init   func(ctx context.Context) error // synchronous part of Start; optional
	run    func(ctx context.Context)
	cancel context.CancelFunc
	done   chan struct{}
}

func (w *worker) Start(ctx context.Context) error {
	if w.init != nil {
		if err := w.init(ctx); err != nil {
			return err
		}
	}
	ctx, w.cancel = context.WithCancel(ctx)
	w.done = make(chan struct{})
	go func() {
		defer close(w.done)
		w.run(ctx)
	}()
	return nil
}

func (w *worker) Stop(ctx context.Context) error {
	w.cancel()
	return waitDone(ctx, w.done)
}

// waitDone waits until done is closed or ctx ends, whichever is first; a
// closed done wins over an ended ctx.
func waitDone(ctx context.Context, done <-chan struct{}) error {
	select {
	case <-done:
		return nil
	default:
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("did not stop in time: %w", ctx.Err())
	}
}

// lifecycle starts the App's parts in list order and stops them in
// reverse order. Its methods are called under App.mu.
type lifecycle struct {
	parts []*part
}

// start starts, in order, the parts among the first n that do not run
// yet. When one fails, it stops every part that runs (in reverse order,
// bounded by stopCtx) and returns the start error, joined with any stop
// errors.
func (l *lifecycle) start(ctx, stopCtx context.Context, n int) error {
	for _, p := range l.parts[:n] {
		if p.running {
			continue
		}
		if err := p.Start(ctx); err != nil {
			err = fmt.Errorf("appview: start %s: %w", p.name, err)
			return errors.Join(err, l.stop(stopCtx))
		}
		p.running = true
	}
	return nil
}

// stop stops the running parts in reverse order, each bounded by ctx, and
// joins the errors of those that did not stop; they stay marked running,
// so a later stop tries them again.
func (l *lifecycle) stop(ctx context.Context) error {
	var errs []error
	for i := len(l.parts) - 1; i >= 0; i-- {
		p := l.parts[i]
		if !p.running {
			continue
		}
		if err := p.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("appview: stop %s: %w", p.name, err))
			continue
		}
		p.running = false
	}
	return errors.Join(errs...)
}

// stillRunning names the parts that run.
func (l *lifecycle) stillRunning() []string {
	var out []string
	for _, p := range l.parts {
		if p.running {
			out = append(out, p.name)
		}
	}
	return out
}

// count is the number of parts up to and including the one named name.
func (l *lifecycle) count(name string) int {
	for i, p := range l.parts {
		if p.name == name {
			return i + 1
		}
	}
	panic("appview: no component named " + name)
}

// appState is where the App is in its lifecycle.
type appState struct {
	shutdown sync.Mutex // held through Shutdown: one at a time

	mu       sync.Mutex // guards the fields below and App.life
	started  bool       // Start (or Serve) started every part
	failed   bool       // a start failed; only Shutdown is left
	shutting bool       // Shutdown was called
	closed   bool       // Shutdown completed: every part stopped, the store closed
	server   *http.Server
}

// Start launches the App's background work, component by component in
// the order components() lists, and returns once all of it runs. If a
// component fails to start, the ones started before it are stopped (in
// reverse order) and Start returns the error; the App cannot be started
// again, and Shutdown closes the store. Start after StartWriting starts
// the rest.
//
// ctx carries values to the background work but its end does not stop
// the work: Shutdown does, in order.
func (a *App) Start(ctx context.Context) error {
	first, err := a.start(ctx, len(a.life.parts), true)
	if first {
		a.announceClaim(ctx)
	}
	return err
}

// StartWriting starts only what writing records through App.Writer needs
// (the settings and the writer), not ingestion, backfill,
// sweeps or the metrics listener: for a program that imports records
// beside a serving instance (`appview records import`). Start later starts
// the rest; Shutdown stops what runs.
func (a *App) StartWriting(ctx context.Context) error {
	_, err := a.start(ctx, a.life.count(writerPart), false)
	return err
}

// start starts the first n parts; all marks a full start, which may happen
// only once when fresh is set (Start), any time otherwise (Serve). first
// reports that this call made the App's first full start.
func (a *App) start(ctx context.Context, n int, fresh bool) (first bool, err error) {
	a.state.mu.Lock()
	defer a.state.mu.Unlock()
	switch {
	case a.state.shutting:
		return false, errors.New("appview: Start after Shutdown")
	case a.state.failed:
		return false, errors.New("appview: a previous Start failed; call Shutdown")
	case a.state.started && fresh:
		return false, errors.New("appview: already started")
	}
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := a.life.start(context.WithoutCancel(ctx), stopCtx, n); err != nil {
		a.state.failed = true
		return false, err
	}
	if n == len(a.life.parts) {
		first = !a.state.started
		a.state.started = true
	}
	return first, nil
}

// Shutdown stops the App gracefully: it stops serving HTTP (when Serve or
// Run serves it), letting in-flight requests finish; then stops the
// components in the reverse of their start order, so that the event
// sources stop first (nothing new arrives) and the writer last, after it
// has committed everything queued; then closes the store if the App
// opened it. ctx bounds the whole.
//
// If ctx ends before every component has stopped (typically: the writer
// is still committing what was queued), Shutdown does not close the store
// out from under it: it returns an error naming what still runs and
// saying that the store was left open, and may be called again to wait
// longer and then close the store. Once Shutdown has completed, later
// calls return nil.
func (a *App) Shutdown(ctx context.Context) error {
	a.state.shutdown.Lock()
	defer a.state.shutdown.Unlock()
	a.state.mu.Lock()
	if a.state.closed {
		a.state.mu.Unlock()
		return nil
	}
	a.state.shutting = true
	srv := a.state.server
	a.state.mu.Unlock()

	var errs []error
	if srv != nil {
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("http shutdown: %w", err))
		} else {
			a.state.mu.Lock()
			a.state.server = nil
			a.state.mu.Unlock()
		}
	}
	a.state.mu.Lock()
	err := a.life.stop(ctx)
	running := a.life.stillRunning()
	a.state.mu.Unlock()
	if err != nil {
		errs = append(errs, err)
	}
	if len(running) > 0 {
		return errors.Join(append(errs, fmt.Errorf("appview: shutdown incomplete: %s still running, so the store was left open; call Shutdown again to wait longer",
			strings.Join(running, ", ")))...)
	}
	if a.metrics != nil && a.cfg.Metrics.Registerer != nil {
		a.metrics.Unregister(a.cfg.Metrics.Registerer)
	}
	a.plugins.Close(ctx)
	if err := a.pluginRuntime.Close(ctx); err != nil {
		errs = append(errs, fmt.Errorf("close plugin runtime: %w", err))
	}
	if a.ownsStore {
		if err := a.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close store: %w", err))
		}
	}
	a.state.mu.Lock()
	a.state.closed = true
	started := a.state.started // a fully started App says it stopped; StartWriting's does not
	a.state.mu.Unlock()
	if started {
		a.log.Info("lexview stopped")
	}
	return errors.Join(errs...)
}
