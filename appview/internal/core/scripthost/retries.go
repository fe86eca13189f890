package scripthost

import (
	"context"
	"errors"
	"time"

	"github.com/lexview/lexview/storage"
)

// The automatic retries of failed record-event scripts. A failure is
// stored as a pending retry (storage.ScriptRetryStore), not as a dead
// letter: the store is the queue, so that no retry is lost when an
// instance stops, and every instance sharing the database takes part,
// each claiming the retries it runs. A retry that succeeds is deleted; one
// whose last attempt fails becomes a dead letter, for an operator.

const (
	// retryClaim is how long a claimed retry is held by the instance
	// running it: past it, another claim may take the retry (its
	// instance stopped midway).
	retryClaim = 5 * time.Minute
	// retryBatch bounds the retries claimed at once.
	retryBatch = 20
	// retryPoll bounds the wait between two claims: the retries other
	// instances store do not wake this one.
	retryPoll = 30 * time.Second
	// retryMinWait keeps the loop from spinning on a due retry another
	// claim holds for a moment.
	retryMinWait = 10 * time.Millisecond
	// maxBackoffShift caps the doubling of the backoff.
	maxBackoffShift = 16
)

// wakeRetries tells the retry loop that a retry was stored.
func (r *Runtime) wakeRetries() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// retryLoop claims the retries that are due (stored by any instance,
// before a restart included), runs them, and waits until the next one is
// due, one is stored here, or retryPoll passes, until ctx ends.
func (r *Runtime) retryLoop(ctx context.Context) {
	for {
		claimed := r.retryDue(ctx)
		if ctx.Err() != nil {
			return
		}
		if claimed == retryBatch {
			continue // more may be due
		}
		wait := retryPoll
		next, err := r.opt.Store.NextScriptRetryDue(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			r.log.Warn("reading the next script retry failed", "err", err)
		case err == nil && !next.IsZero():
			wait = min(wait, max(next.Sub(r.opt.Now()), retryMinWait))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-r.wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// retryDue claims the retries due now and runs them one by one. It
// returns how many it claimed.
func (r *Runtime) retryDue(ctx context.Context) int {
	now := r.opt.Now()
	due, err := r.opt.Store.ClaimScriptRetries(ctx, now, now.Add(retryClaim), retryBatch)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("claiming script retries failed", "err", err)
		}
		return 0
	}
	for _, job := range due {
		r.retry(ctx, job)
	}
	return len(due)
}

// retry makes one more attempt at a claimed retry and stores the outcome:
// deleted when it succeeds, a dead letter when it was the last attempt
// (or no script is bound any more), otherwise due again after the
// doubled backoff. When ctx ends first, the retry is released for the
// next claim without counting an attempt.
func (r *Runtime) retry(ctx context.Context, job storage.ScriptRetry) {
	store, bg := r.opt.Store, context.WithoutCancel(ctx)
	var err error
	if ctx.Err() == nil {
		err = r.RetryDeadLetter(ctx, job.DeadLetter)
	}
	attempts := job.Attempts + 1
	var serr error
	switch {
	case ctx.Err() == nil && err == nil:
		serr = store.DeleteScriptRetry(bg, job.ID)
	case ctx.Err() != nil: // stopping: the failure may be the stop's
		serr = store.RescheduleScriptRetry(bg, job.ID, job.Error, job.Attempts, r.opt.Now())
	case errors.Is(err, ErrNoScript): // the script was removed: an operator decides (reindex, dismiss)
		_, serr = store.PromoteScriptRetry(bg, job.ID, job.Error, job.Attempts, r.opt.Now())
	case attempts >= r.opt.Retry.Attempts:
		_, serr = store.PromoteScriptRetry(bg, job.ID, clip(err.Error(), maxErrorText), attempts, r.opt.Now())
	default:
		backoff := r.opt.Retry.Backoff << min(attempts-1, maxBackoffShift)
		serr = store.RescheduleScriptRetry(bg, job.ID, clip(err.Error(), maxErrorText), attempts, r.opt.Now().Add(backoff))
	}
	if serr != nil && !errors.Is(serr, storage.ErrNotFound) {
		// The retry stays claimed: it is taken up again after retryClaim.
		r.log.Warn("storing the outcome of a script retry failed", "id", job.ID, "uri", job.URI, "err", serr)
	}
}
