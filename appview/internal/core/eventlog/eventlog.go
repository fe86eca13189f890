// Package eventlog appends entries to the audit trail and purges old ones.
package eventlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/lexview/lexview/appview/internal/core/fail"
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
	// GetSetting reads VerboseSetting.
	GetSetting(ctx context.Context, key string) (string, error)
	AppendEvents(ctx context.Context, events []storage.Event) error
	PurgeEvents(ctx context.Context, before time.Time) (int64, error)
	ListEvents(ctx context.Context, f storage.EventFilter) ([]storage.Event, bool, error)
}

// Log records events. A failure to record is logged, never returned: the
// action that produced the event has already happened.
type Log struct {
	store Store
	now   func() time.Time
	log   *slog.Logger

	mu       sync.Mutex
	problems map[string]int64 // warn and error entries recorded, by type
}

// maxProblemTypes bounds the event types Problems counts apart; entries
// of further types count under OtherProblems.
const maxProblemTypes = 200

// OtherProblems is the type Problems counts entries under once it counts
// maxProblemTypes types.
const OtherProblems = "other"

// Options configure a Log.
type Options struct {
	Store  Store
	Now    func() time.Time // default time.Now
	Logger *slog.Logger     // default slog.Default()
}

// New returns a Log writing to opts.Store.
func New(opts Options) *Log {
	l := &Log{store: opts.Store, now: opts.Now, log: opts.Logger, problems: map[string]int64{}}
	if l.now == nil {
		l.now = time.Now
	}
	if l.log == nil {
		l.log = slog.Default()
	}
	return l
}

// Record appends one entry.
func (l *Log) Record(ctx context.Context, e Entry) {
	if e.Severity == "" {
		e.Severity = Info
	}
	if e.Severity != Info {
		l.countProblem(e.Type)
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

// countProblem counts one warn or error entry of type typ.
func (l *Log) countProblem(typ string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.problems[typ]; !ok && len(l.problems) >= maxProblemTypes {
		typ = OtherProblems
	}
	l.problems[typ]++
}

// Problems counts the warn and error entries recorded through this Log
// since it was made, by event type (for the dashboard's history; entries
// recorded by other instances sharing the store are not counted).
func (l *Log) Problems() map[string]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.problems)
}

// VerboseSetting is the setting that turns verbose event logging on
// ("true"; "false" or absent: off). Events too frequent for the audit
// trail by default (RecordPutSkipped) are recorded only under it. It is
// read at each such event, so a change applies at once.
const VerboseSetting = "event_log_verbose"

// RecordVerbose appends e only while verbose logging is on
// (VerboseSetting).
func (l *Log) RecordVerbose(ctx context.Context, e Entry) {
	if l.Verbose(ctx) {
		l.Record(ctx, e)
	}
}

// Verbose reports whether verbose logging is on. A setting that cannot be
// read counts as off (and is logged).
func (l *Log) Verbose(ctx context.Context) bool {
	v, err := l.store.GetSetting(context.WithoutCancel(ctx), VerboseSetting)
	if err != nil {
		if !errors.Is(err, storage.ErrNotFound) {
			l.log.Warn("reading the verbose event-log setting failed; verbose events are left out", "err", err)
		}
		return false
	}
	on, _ := strconv.ParseBool(v)
	return on
}

// Event types of the record operations Lexview makes in a user's
// repository on their behalf: procedures' writes (default and scripted)
// and scripts' deletes.
const (
	RecordCreated = "record.created"
	RecordUpdated = "record.updated"
	RecordDeleted = "record.deleted"
	// RecordPutSkipped is a put the PDS answered without a commit: the
	// record was unchanged, nothing was written, and nothing is indexed
	// again (the specification's "put record skip"). Recorded only under
	// verbose logging.
	RecordPutSkipped = "record.put_skipped"
)

// RecordOp is the audit entry of a record operation made on actor's
// behalf: created, updated or deleted according to op, subject the
// record's AT URI, detail the record's cid (not for deletes), the
// commit's rev and what made it (via: "procedure" or "script").
func RecordOp(op storage.ChangeOp, actor, uri, cid, rev, via string) Entry {
	typ := RecordCreated
	switch op {
	case storage.OpUpdate:
		typ = RecordUpdated
	case storage.OpDelete:
		typ = RecordDeleted
	}
	detail := map[string]any{"rev": rev, "via": via}
	if op != storage.OpDelete {
		detail["cid"] = cid
	}
	return Entry{Type: typ, ActorDID: actor, Subject: uri, Detail: detail}
}

// PutSkipped is the audit entry of a put the PDS made no commit for
// (RecordPutSkipped), to record with RecordVerbose.
func PutSkipped(actor, uri, cid, via string) Entry {
	return Entry{Type: RecordPutSkipped, ActorDID: actor, Subject: uri, Detail: map[string]any{"cid": cid, "via": via}}
}

// RunPurge purges the entries older than retention() at once and then
// every interval, and whenever wake fires (nil: never), until ctx ends.
// retention is read at each round, so a change applies from the next one
// (send on wake to make that at once); a retention of zero or less keeps
// everything (the round is skipped).
func (l *Log) RunPurge(ctx context.Context, retention func() time.Duration, interval time.Duration, wake <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if keep := retention(); keep > 0 {
			if n, err := l.Purge(ctx, keep); err != nil {
				if ctx.Err() == nil {
					l.log.Error("purging event log failed", "err", err)
				}
			} else if n > 0 {
				l.log.Info("purged old event-log entries", "count", n)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-wake:
		}
	}
}

// Purge deletes the entries older than retention and returns how many; a
// retention of zero or less keeps everything.
func (l *Log) Purge(ctx context.Context, retention time.Duration) (int64, error) {
	if retention <= 0 {
		return 0, nil
	}
	n, err := l.store.PurgeEvents(ctx, l.now().Add(-retention))
	if err != nil {
		return 0, fmt.Errorf("purge event log: %w", err)
	}
	return n, nil
}

// Query selects entries for List: exact Type, Category (the part before
// the first dot), Severity and Subject, each optional; Limit entries
// after Cursor (a cursor List returned; "" for the first page).
type Query struct {
	Type, Category, Severity, Subject string
	Limit                             int
	Cursor                            string
}

// cursorScope binds event-log cursors to the listing. The filters are not
// part of the scope: the position (an entry id) means the same under any
// filter.
const cursorScope = "events"

var errBadCursor = fail.New(fail.Invalid, "invalid cursor")

// List returns a page of entries, newest first, and the cursor of the
// next page ("" on the last one).
func (l *Log) List(ctx context.Context, q Query) ([]storage.Event, string, error) {
	switch q.Severity {
	case "", Info, Warn, Error:
	default:
		return nil, "", fail.New(fail.Invalid, "severity must be info, warn or error")
	}
	f := storage.EventFilter{Type: q.Type, Category: q.Category, Severity: q.Severity, Subject: q.Subject, Limit: q.Limit}
	if q.Cursor != "" {
		pos, err := storage.DecodeCursor(cursorScope, q.Cursor)
		if err != nil {
			return nil, "", errBadCursor
		}
		if _, err := strconv.ParseInt(pos.URI, 10, 64); err != nil {
			return nil, "", errBadCursor
		}
		f.Before = pos.URI
	}
	list, more, err := l.store.ListEvents(ctx, f)
	if errors.Is(err, storage.ErrInvalidCursor) {
		return nil, "", errBadCursor
	}
	if err != nil || !more || len(list) == 0 {
		return list, "", err
	}
	last := list[len(list)-1]
	return list, storage.EncodeCursor(cursorScope, storage.Position{Time: last.CreatedAt, URI: last.ID}), nil
}
