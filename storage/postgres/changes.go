package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/lib/pq"

	"github.com/lexview/lexview/storage"
)

// changesChannel is the channel migration 0027's triggers notify.
const changesChannel = "lexview_changes"

var _ storage.ChangeWatcher = (*Store)(nil)

// WatchChanges implements storage.ChangeWatcher with LISTEN on a
// connection of its own, which lib/pq re-establishes when it is lost
// (then fn("") says that notifications may have been missed).
func (s *Store) WatchChanges(ctx context.Context, fn func(table string)) error {
	events := make(chan pq.ListenerEventType, 4)
	l := pq.NewListener(s.url, 100*time.Millisecond, 10*time.Second, func(ev pq.ListenerEventType, _ error) {
		select {
		case events <- ev:
		default:
		}
	})
	defer l.Close()
	if err := l.Listen(changesChannel); err != nil {
		return fmt.Errorf("postgres: listen for changes: %w", err)
	}
	fn("") // whatever changed before the listener was up
	ping := time.NewTicker(30 * time.Second)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case n := <-l.Notify:
			if n == nil { // the connection was re-established
				fn("")
				continue
			}
			fn(n.Extra)
		case ev := <-events:
			if ev == pq.ListenerEventReconnected {
				fn("")
			}
		case <-ping.C:
			// A ping notices a silently dead connection sooner than TCP does.
			go func() { _ = l.Ping() }()
		}
	}
}
