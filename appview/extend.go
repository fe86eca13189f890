package appview

import (
	"context"
	"net/http"

	"github.com/lexview/lexview/appview/internal/core/caller"
	"github.com/lexview/lexview/appview/internal/core/indexer"
	"github.com/lexview/lexview/storage"
)

// RecordHook is a Go record-event hook (Config.RecordHooks): the batch
// writer calls it for every change it is about to write, after the Lua
// record scripts, for one change at a time (never concurrently, also when
// batches are committed side by side). It may rewrite c.Record (the
// result is written as it is, without a second validation) and returns
// whether to write the change at all. It should be fast and must not
// block: it holds up the batch. It has no error: a hook that cannot decide
// keeps the change and reports the problem itself.
type RecordHook func(ctx context.Context, c *storage.Change) (keep bool)

// CallerDID returns the DID of the user authenticated on an XRPC request
// (a DPoP session, a service-auth JWT or the session cookie), for Go
// method handlers (Config.XRPCMethods); ok is false for an anonymous call.
func CallerDID(r *http.Request) (did string, ok bool) {
	if c := caller.UserFrom(r.Context()); c != nil {
		return c.DID, true
	}
	return "", false
}

// goHooks runs the Lua record scripts (inner), then the Go hooks on the
// changes the scripts kept.
type goHooks struct {
	inner indexer.Hook
	hooks []RecordHook
}

// withGoHooks adds hooks after inner; without hooks it is inner.
func withGoHooks(inner indexer.Hook, hooks []RecordHook) indexer.Hook {
	if len(hooks) == 0 {
		return inner
	}
	return &goHooks{inner: inner, hooks: hooks}
}

// Wants implements indexer.Hook: every change goes past the Go hooks.
func (g *goHooks) Wants(storage.Change) bool { return true }

// Apply implements indexer.Hook.
func (g *goHooks) Apply(ctx context.Context, changes []storage.Change) ([]indexer.Outcome, error) {
	out := make([]indexer.Outcome, len(changes))
	if g.inner != nil {
		var err error
		if out, err = g.inner.Apply(ctx, changes); err != nil {
			return nil, err
		}
	}
	for i := range changes {
		for _, h := range g.hooks {
			if !out[i].Written() {
				break
			}
			out[i].Skip = !h(ctx, &changes[i])
		}
	}
	return out, nil
}
