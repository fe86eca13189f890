package scripthost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/lexview/lexview/appview/internal/core/indexer"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/script"
	"github.com/lexview/lexview/storage"
)

var _ indexer.Hook = (*Runtime)(nil)

// eventScript returns the script a record change triggers: the
// action-specific one first, then the collection's record.index script.
func (s *snapshot) eventScript(collection string, op storage.ChangeOp) (*bound, bool) {
	kind := script.KindCreate
	switch op {
	case storage.OpUpdate:
		kind = script.KindUpdate
	case storage.OpDelete:
		kind = script.KindDelete
	}
	if b, ok := s.byTrigger[script.Trigger(kind, collection)]; ok {
		return b, true
	}
	b, ok := s.byTrigger[script.Trigger(script.KindIndex, collection)]
	return b, ok
}

// Wants reports whether a change triggers a record-event script.
func (r *Runtime) Wants(c storage.Change) bool {
	if c.Scripted {
		return false
	}
	_, ok := r.current().eventScript(c.Collection, c.Op)
	return ok
}

// outcome is what a record-event script made of a change.
type outcome struct {
	change storage.Change
	keep   bool
	err    error
}

// Apply runs the record-event scripts of changes concurrently, rewriting
// their records in place, and reports what to do with each. Each failure
// is stored before Apply returns: as a pending automatic retry, or as a
// dead letter when the policy allows no retry. An error means it could
// not be stored.
func (r *Runtime) Apply(ctx context.Context, changes []storage.Change) ([]indexer.Outcome, error) {
	snap := r.current()
	results := make([]outcome, len(changes))
	var todo []int
	for i, c := range changes {
		results[i] = outcome{change: c, keep: true}
		if !c.Scripted {
			if _, ok := snap.eventScript(c.Collection, c.Op); ok {
				todo = append(todo, i)
			}
		}
	}
	parallel(todo, func(i int) { results[i] = r.runEvent(ctx, snap, changes[i]) })
	out := make([]indexer.Outcome, len(changes))
	for i, res := range results {
		if res.err != nil {
			if err := r.failed(ctx, changes[i], res.err); err != nil {
				return nil, err
			}
			out[i].Err = res.err
			continue
		}
		changes[i], out[i].Skip = res.change, !res.keep
	}
	return out, nil
}

// parallel calls fn with each of todo, on up to GOMAXPROCS goroutines,
// and returns when every call has.
func parallel(todo []int, fn func(i int)) {
	var wg sync.WaitGroup
	work := make(chan int)
	for range min(runtime.GOMAXPROCS(0), len(todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				fn(i)
			}
		}()
	}
	for _, i := range todo {
		work <- i
	}
	close(work)
	wg.Wait()
}

// runEvent runs the script a change triggers (if any).
func (r *Runtime) runEvent(ctx context.Context, snap *snapshot, c storage.Change) outcome {
	b, ok := snap.eventScript(c.Collection, c.Op)
	if !ok {
		return outcome{change: c, keep: true}
	}
	inv := &script.Invocation{
		Host: r.host(), Kind: kindOf(b.trigger), Method: c.Collection, Collection: c.Collection,
		Event: &script.RecordEvent{
			Action: string(c.Op), URI: c.URI(), DID: c.DID, Collection: c.Collection, RKey: c.RKey,
			CID: c.CID, Rev: c.Rev, Record: c.Record,
		},
	}
	out, err := b.execute(ctx, inv)
	if err == nil {
		c, ok, err = interpret(c, out)
		if err == nil {
			return outcome{change: c, keep: ok}
		}
		err = &script.Error{Kind: script.ErrRuntime, Msg: err.Error()}
	}
	r.recordError(ctx, b, inv, string(c.Record), err)
	return outcome{err: err}
}

func kindOf(trigger string) string {
	kind, _, _ := script.ParseTrigger(trigger)
	return kind
}

// interpret applies a record-event script's result: nil or false skips
// the change, true keeps it, a table replaces the record (creates and
// updates). A table whose text cannot be stored (a NUL character, which a
// Lua string may hold) is a script error: the record is written after
// validation, so this is where it is refused.
func interpret(c storage.Change, out []byte) (storage.Change, bool, error) {
	switch string(out) {
	case "null", "false":
		return c, false, nil
	case "true":
		return c, true, nil
	}
	if len(out) == 0 || out[0] != '{' {
		return c, false, errors.New("handle() must return a table (the record), true (keep it) or nil (skip it)")
	}
	if c.Op != storage.OpDelete {
		if err := lexicon.CheckRecordText(out); err != nil {
			return c, false, fmt.Errorf("handle() returned a record that cannot be stored: %w", err)
		}
		c.Record = json.RawMessage(out)
	}
	return c, true, nil
}

// failed stores a change whose script failed: as a pending retry, due
// after the backoff, or, when the policy allows a single attempt, as a
// dead letter at once.
func (r *Runtime) failed(ctx context.Context, c storage.Change, cause error) error {
	ctx = context.WithoutCancel(ctx)
	d := letterOf(c, cause)
	if r.opt.Retry.Attempts <= 1 {
		if _, err := r.opt.Store.AddDeadLetter(ctx, d); err != nil {
			return fmt.Errorf("scripting: store dead letter: %w", err)
		}
		return nil
	}
	now := r.opt.Now()
	d.CreatedAt = now
	if _, err := r.opt.Store.AddScriptRetry(ctx, storage.ScriptRetry{DeadLetter: d, DueAt: now.Add(r.opt.Retry.Backoff)}); err != nil {
		return fmt.Errorf("scripting: store a pending retry: %w", err)
	}
	r.wakeRetries()
	return nil
}

// letterOf is the record of a change whose script failed with cause, at
// its first attempt.
func letterOf(c storage.Change, cause error) storage.DeadLetter {
	return storage.DeadLetter{
		Kind: storage.DeadLetterRecord, LexiconID: c.Collection, URI: c.URI(), DID: c.DID, Collection: c.Collection,
		RKey: c.RKey, Action: string(c.Op), CID: c.CID, Rev: c.Rev, Error: clip(cause.Error(), maxErrorText), Attempts: 1,
		Record: c.Record,
	}
}

// changeOf rebuilds the change a dead letter holds.
func changeOf(d storage.DeadLetter) storage.Change {
	return storage.Change{Op: storage.ChangeOp(d.Action), DID: d.DID, Collection: d.Collection, RKey: d.RKey,
		CID: d.CID, Rev: d.Rev, Record: d.Record}
}

// RetryDeadLetter runs the bound script again on the dead letter's stored
// record and writes the result. It returns ErrNoScript when no
// script is bound, and the script's failure otherwise.
func (r *Runtime) RetryDeadLetter(ctx context.Context, d storage.DeadLetter) error {
	return r.reprocess(ctx, changeOf(d))
}

// reprocess runs a change through its script (if any) and writes the
// outcome, waiting for the commit.
func (r *Runtime) reprocess(ctx context.Context, c storage.Change) error {
	snap := r.current()
	if _, ok := snap.eventScript(c.Collection, c.Op); !ok {
		return ErrNoScript
	}
	res := r.runEvent(ctx, snap, c)
	if res.err != nil {
		return res.err
	}
	if !res.keep {
		return nil
	}
	return r.write(ctx, "dead-letter", res.change)
}

func (r *Runtime) write(ctx context.Context, source string, c storage.Change) error {
	if r.writer == nil {
		return errors.New("scripting: no writer")
	}
	c.Scripted = true
	res, err := r.writer.Write(ctx, source, []storage.Change{c})
	if err != nil {
		return err
	}
	if len(res.Rejected) > 0 {
		return fmt.Errorf("the record was rejected: %w", res.Rejected[0].Err)
	}
	return nil
}
