// Package eventlog appends entries to the audit trail and purges old ones.
package eventlog

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/lexview/lexview/storage"
)

// Severities.
const (
	Info  = "info"
	Warn  = "warn"
	Error = "error"
)

// Entry is an event to record.
type Entry struct {
	Type     string // dotted: category.action, e.g. lexicon.created
	Severity string // Info (default), Warn or Error
	ActorDID string
	Subject  string
	Detail   any // encoded as a JSON object; nil means {}
}

// Store is the persistence the event log needs.
type Store interface {
	AppendEvents(ctx context.Context, events []storage.Event) error
	PurgeEvents(ctx context.Context, before time.Time) (int64, error)
}

// Log records events. A failure to record is logged, never returned: the
// action that produced the event has already happened.
type Log struct {
	store Store
	now   func() time.Time
	log   *slog.Logger
}

// New returns a Log writing to store.
func New(store Store, now func() time.Time, log *slog.Logger) *Log {
	return &Log{store: store, now: now, log: log}
}

// Record appends one entry.
func (l *Log) Record(ctx context.Context, e Entry) {
	if e.Severity == "" {
		e.Severity = Info
	}
	detail := json.RawMessage(`{}`)
	if e.Detail != nil {
		b, err := json.Marshal(e.Detail)
		if err != nil {
			l.log.Error("event detail does not encode", "event_type", e.Type, "err", err)
		} else {
			detail = b
		}
	}
	// The entry outlives a cancelled request: record it regardless.
	ctx = context.WithoutCancel(ctx)
	err := l.store.AppendEvents(ctx, []storage.Event{{
		Type: e.Type, Severity: e.Severity, ActorDID: e.ActorDID, Subject: e.Subject, Detail: detail, CreatedAt: l.now(),
	}})
	if err != nil {
		l.log.Error("recording event failed", "event_type", e.Type, "subject", e.Subject, "err", err)
	}
}

// RunPurge deletes entries older than retention every interval until ctx
// ends. A retention of zero or less keeps everything.
func (l *Log) RunPurge(ctx context.Context, retention, interval time.Duration) {
	if retention <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if n, err := l.store.PurgeEvents(ctx, l.now().Add(-retention)); err != nil {
			if ctx.Err() == nil {
				l.log.Error("purging event log failed", "err", err)
			}
		} else if n > 0 {
			l.log.Info("purged old event-log entries", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
