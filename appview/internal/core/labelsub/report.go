package labelsub

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
)

// reporter writes one labeler's event-log entries without flooding the
// log: an entry type is recorded at most once per Options.EventEvery, the
// next one counting those left out ("suppressed"), and refused labels are
// summed by reason into labeler.refused_labels entries.
type reporter struct {
	cfg Options
	did string

	mu         sync.Mutex
	last       map[string]time.Time // entry type → when last recorded
	suppressed map[string]int
	refused    map[string]int // reason → count since the last entry
}

func newReporter(cfg Options, did string) *reporter {
	return &reporter{cfg: cfg, did: did, last: map[string]time.Time{}, suppressed: map[string]int{}, refused: map[string]int{}}
}

// record appends an entry of type typ unless one was recorded less than
// EventEvery ago.
func (r *reporter) record(ctx context.Context, typ, severity string, detail map[string]any) {
	r.mu.Lock()
	now := r.cfg.Now()
	if last, ok := r.last[typ]; ok && now.Sub(last) < r.cfg.EventEvery {
		r.suppressed[typ]++
		r.mu.Unlock()
		return
	}
	r.last[typ] = now
	if n := r.suppressed[typ]; n > 0 {
		detail["suppressed"] = n
		delete(r.suppressed, typ)
	}
	r.mu.Unlock()
	if r.cfg.Events != nil {
		r.cfg.Events.Record(ctx, eventlog.Entry{Type: typ, Severity: severity, Subject: r.did, Detail: detail})
	}
}

// refuse counts a refused label (or frame) and records the counts when
// the last labeler.refused_labels entry is EventEvery old.
func (r *reporter) refuse(ctx context.Context, reason string) {
	r.cfg.Metrics.LabelRefused(r.did, reason)
	r.mu.Lock()
	r.refused[reason]++
	r.mu.Unlock()
	r.flush(ctx, false)
}

// flush records the refused counts: when force, whenever there are some;
// otherwise only when the last entry is EventEvery old.
func (r *reporter) flush(ctx context.Context, force bool) {
	const typ = "labeler.refused_labels"
	r.mu.Lock()
	now := r.cfg.Now()
	if len(r.refused) == 0 || (!force && now.Sub(r.last[typ]) < r.cfg.EventEvery) {
		r.mu.Unlock()
		return
	}
	counts := maps.Clone(r.refused)
	clear(r.refused)
	r.last[typ] = now
	r.mu.Unlock()
	if r.cfg.Events != nil {
		r.cfg.Events.Record(ctx, eventlog.Entry{Type: typ, Severity: eventlog.Warn, Subject: r.did,
			Detail: map[string]any{"refused": counts}})
	}
}
