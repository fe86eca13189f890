package appview

import (
	"context"
	"time"

	"github.com/lexview/lexview/storage"
)

// Reconciliation intervals when Config.Cluster.ChangeReconcile is zero.
const (
	reconcileWithFeed    = 30 * time.Second // PostgreSQL: notifications do the work
	reconcileWithoutFeed = 5 * time.Second  // SQLite: another process's changes arrive this way
)

// changeFeed is the component that brings the configuration changes made
// through other instances here: on PostgreSQL as they are committed
// (storage.ChangeWatcher, LISTEN/NOTIFY), and on both databases by
// re-reading everything every Config.Cluster.ChangeReconcile, which repairs a
// missed notification. Changes made through this instance apply at once
// and need neither.
func (a *App) changeFeed() component {
	watcher, _ := a.store.(storage.ChangeWatcher)
	every := a.cfg.Cluster.ChangeReconcile
	if every <= 0 {
		every = reconcileWithoutFeed
		if watcher != nil {
			every = reconcileWithFeed
		}
	}
	return &worker{run: func(ctx context.Context) {
		tables := make(chan string, 256)
		if watcher != nil {
			go func() {
				for ctx.Err() == nil {
					err := watcher.WatchChanges(ctx, func(table string) {
						select {
						case tables <- table:
						default: // full: read everything again
							select {
							case tables <- "":
							default:
							}
						}
					})
					if err != nil && ctx.Err() == nil {
						a.log.Warn("listening for changes made through other instances failed; retrying", "err", err)
						select {
						case <-time.After(time.Second):
						case <-ctx.Done():
						}
					}
				}
			}()
		}
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				a.applyChanges(ctx, "")
			case t := <-tables:
				// Fold what arrived meanwhile: one refresh per table.
				seen := map[string]bool{t: true}
				for more := true; more; {
					select {
					case t := <-tables:
						seen[t] = true
					default:
						more = false
					}
				}
				if seen[""] {
					a.applyChanges(ctx, "")
					continue
				}
				for t := range seen {
					a.applyChanges(ctx, t)
				}
			}
		}
	}}
}

// applyChanges re-reads what a change to table (every table for "") may
// have made stale in this instance's caches.
func (a *App) applyChanges(ctx context.Context, table string) {
	all := table == ""
	is := func(names ...string) bool {
		for _, n := range names {
			if all || n == table {
				return true
			}
		}
		return false
	}
	warn := func(what string, err error) {
		if err != nil && ctx.Err() == nil {
			a.log.Warn("re-reading "+what+" changed through another instance failed", "err", err)
		}
	}
	if is("lexicons", "network_lexicons") {
		_, err := a.lexicons.Refresh(ctx)
		warn("lexicons", err)
	}
	if is("scripts") {
		warn("scripts", a.scripts.Reload(ctx))
	}
	if is("script_variables") {
		a.scripts.InvalidateVars()
	}
	if is("settings") {
		warn("settings", a.applySettings(ctx))
		a.svc.ProxyPolicies.Invalidate()
		a.svc.Identity.Invalidate()
	}
	if is("api_clients") {
		a.clients.InvalidateAll()
	}
	if is("domains") {
		a.svc.Domains.Invalidate()
	}
	// Plugins are stored with their modules: they are read again on a
	// notification, or in the reconciliation when another process may
	// have changed them (PostgreSQL), not every 5 s on SQLite.
	if table == "plugins" || (all && a.store.Dialect() == "postgres") {
		warn("plugins", a.plugins.Sync(ctx))
	}
	if is("service_entries", "service_entry_methods", "service_entry_allowlist", "verification_methods") {
		a.svc.Entries.Invalidate()
	}
	// An index declared or dropped through another instance: the leader's
	// build starts on it now rather than at its next recheck (every 30 s).
	// This needs a change notification of field_indexes, which its
	// migration does not install yet; the reconciliation does not wake the
	// build, whose own recheck covers it.
	if table == "field_indexes" {
		a.fieldIndexes.Wake()
	}
}
