package history

import (
	"github.com/lexview/lexview/internal/textclip"

	"fmt"
	"strings"
	"time"
)

// Statuses of Health and of its parts, from best to worst: ok, warn
// (degraded: working, but an operator should look), bad (failing).
// off is a part that is not running by configuration (live ingestion
// off), which counts as ok; unknown is the status before the first
// sample.
const (
	StatusOK      = "ok"
	StatusWarn    = "warn"
	StatusBad     = "bad"
	StatusOff     = "off"
	StatusUnknown = "unknown"
)

// Limits are the thresholds of the health rules (see Health).
type Limits struct {
	// LagWarn and LagBad: a connected source this far behind the head of
	// its stream is degraded, and failing. Defaults 1 min and 10 min.
	LagWarn, LagBad time.Duration
	// Disconnected: a source not connected (connecting, waiting to dial
	// again) for this long is failing; before that it is degraded. An
	// idle source (no collection to follow) is no problem.
	// Default 6 intervals (1 min at the default interval).
	Disconnected time.Duration
	// SlowDatabase: a database round trip this long is degraded. Default
	// 1 s.
	SlowDatabase time.Duration
}

func (l Limits) withDefaults(interval time.Duration) Limits {
	if l.LagWarn <= 0 {
		l.LagWarn = time.Minute
	}
	if l.LagBad <= 0 {
		l.LagBad = 10 * time.Minute
	}
	if l.Disconnected <= 0 {
		l.Disconnected = 6 * interval
	}
	if l.SlowDatabase <= 0 {
		l.SlowDatabase = time.Second
	}
	return l
}

// Health says whether ingestion, backfill and the database are healthy,
// as judged at the last sample.
type Health struct {
	// Status is the worst of the parts' (off counting as ok).
	Status    string    `json:"status"`
	CheckedAt time.Time `json:"checked_at,omitzero"`
	// Parts are ingestion, backfill and database, in that order.
	Parts []Part `json:"parts"`
}

// Part is the health of one part, with a sentence saying why.
type Part struct {
	Name    string `json:"name"`
	Status  string `json:"status"`
	Message string `json:"message"`
}

// rank orders statuses from best to worst.
func rank(status string) int {
	switch status {
	case StatusWarn:
		return 1
	case StatusBad:
		return 2
	}
	return 0
}

// worse returns the worse of two statuses.
func worse(a, b string) string {
	if rank(b) > rank(a) {
		return b
	}
	return a
}

// judge applies the health rules to reading r taken at now.
func (h *History) judge(r *Reading, now time.Time) Health {
	parts := []Part{h.ingestion(r, now), backfill(r), h.database(r)}
	out := Health{Status: StatusOK, CheckedAt: now, Parts: parts}
	for _, p := range parts {
		out.Status = worse(out.Status, p.Status)
	}
	return out
}

// ingestion: off with no event source; ok on an instance that does not
// lead (another runs the sources); otherwise the worst of the sources':
// connected and less than LagWarn behind is ok, LagWarn behind is
// degraded and LagBad failing; idle (no collection to follow, as on a
// fresh instance) is ok; otherwise not connected is degraded, and
// failing once it has lasted Disconnected.
func (h *History) ingestion(r *Reading, now time.Time) Part {
	p := Part{Name: "ingestion", Status: StatusOK}
	switch {
	case len(r.Sources) == 0:
		p.Status, p.Message = StatusOff, "Live ingestion is off: no event source is configured."
		return p
	case !r.Leading:
		p.Message = "Another instance leads and runs the event sources."
		return p
	}
	var problems, fine []string
	for _, s := range r.Sources {
		lag := time.Duration(s.Lag * float64(time.Second))
		switch {
		case s.State == Idle:
			fine = append(fine, s.Name+": idle, no collection to follow yet")
		case s.State != Connected:
			since := now.Sub(h.down[s.Name])
			st := StatusWarn
			if since >= h.limits.Disconnected {
				st = StatusBad
			}
			p.Status = worse(p.Status, st)
			msg := fmt.Sprintf("%s: not connected (%s) for %s", s.Name, orNone(s.State), span(since))
			if s.LastError != "" {
				msg += ", last error: " + s.LastError
			}
			problems = append(problems, msg)
		case lag >= h.limits.LagWarn:
			st := StatusWarn
			if lag >= h.limits.LagBad {
				st = StatusBad
			}
			p.Status = worse(p.Status, st)
			problems = append(problems, fmt.Sprintf("%s: %s behind its stream", s.Name, span(lag)))
		default:
			fine = append(fine, fmt.Sprintf("%s: connected, %s behind", s.Name, span(lag)))
		}
	}
	if len(problems) > 0 {
		p.Message = sentence(problems)
	} else {
		p.Message = sentence(fine)
	}
	return p
}

// backfill: degraded when no job runs and the job that finished last
// failed; ok otherwise.
func backfill(r *Reading) Part {
	p := Part{Name: "backfill", Status: StatusOK}
	b := r.Backfill
	switch {
	case b.Current != nil:
		p.Message = fmt.Sprintf("Job %s is %s (%s).", b.Current.ID, b.Current.Status, strings.ReplaceAll(b.Current.Stage, "_", " "))
	case b.LastFinished != nil && b.LastFinished.Status == "failed":
		p.Status = StatusWarn
		p.Message = fmt.Sprintf("The last job, %s, failed: %s.", b.LastFinished.ID, clip(orNone(b.LastFinished.Error)))
	default:
		p.Message = "No job is running."
	}
	if b.Waiting > 0 {
		p.Message += fmt.Sprintf(" %d waiting.", b.Waiting)
	}
	return p
}

// database: failing when the round trip failed, degraded when it took
// SlowDatabase or longer.
func (h *History) database(r *Reading) Part {
	p := Part{Name: "database", Status: StatusOK}
	switch {
	case r.Database != nil:
		p.Status, p.Message = StatusBad, "The database did not answer: "+clip(r.Database.Error())+"."
	case r.Ping >= h.limits.SlowDatabase:
		p.Status, p.Message = StatusWarn, fmt.Sprintf("The database answered slowly, in %s.", span(r.Ping))
	default:
		p.Message = fmt.Sprintf("The database answered in %s.", span(r.Ping))
	}
	return p
}

// span renders a duration for people: "less than 1 ms", "850 ms",
// "12 s", "3 min", "2 h".
func span(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return "less than 1 ms"
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	}
	return fmt.Sprintf("%d h", int(d.Hours()))
}

// sentence joins clauses (each starting with a source's name, kept as
// it is written) into one sentence.
func sentence(clauses []string) string {
	return strings.Join(clauses, "; ") + "."
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// clip cuts a message shown in the health to 200 bytes.
func clip(s string) string { return textclip.Clip(s, 200) }
