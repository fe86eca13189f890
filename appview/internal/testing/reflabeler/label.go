package reflabeler

import (
	"testing"
	"time"
)

// Spec is a label to emit. Only URI and Val are required. Nothing is
// checked, here or by the server: tests can emit malformed subjects, future
// creation times and the like.
type Spec struct {
	// URI is the subject: an at:// URI (a record) or a DID (an account).
	URI string
	// CID, when set, labels that version of the record only.
	CID string
	// Val is the label value, e.g. "spam".
	Val string
	// Neg negates an earlier label with the same URI and Val.
	Neg bool
	// Cts is the creation time; zero means now.
	Cts time.Time
	// Exp is when the label stops applying; zero means never.
	Exp time.Time
}

// Label is an emitted label as the server stored it.
type Label struct {
	// Seq is the label's sequence number in the subscribeLabels stream.
	Seq int64
	Src string
	URI string
	CID string // "" when none
	Val string
	Neg bool
	Cts string // as signed, e.g. 2026-11-25T01:02:03.456Z
	Exp string // as signed; "" when none
}

// Label emits val on subject (an at:// URI or a DID) and returns it.
func (l *Labeler) Label(t testing.TB, subject, val string) Label {
	t.Helper()
	return l.Emit(t, Spec{URI: subject, Val: val})
}

// Negate emits a negation of val on subject and returns it.
func (l *Labeler) Negate(t testing.TB, subject, val string) Label {
	t.Helper()
	return l.Emit(t, Spec{URI: subject, Val: val, Neg: true})
}

// LabelExpiring emits val on subject, expiring at exp, and returns it.
func (l *Labeler) LabelExpiring(t testing.TB, subject, val string, exp time.Time) Label {
	t.Helper()
	return l.Emit(t, Spec{URI: subject, Val: val, Exp: exp})
}

// Emit emits a label (the server's createLabel: signed, stored and sent to
// the subscribers) and returns it. A failure fails the test.
func (l *Labeler) Emit(t testing.TB, s Spec) Label {
	t.Helper()
	l.mu.Lock()
	p := l.proc
	l.mu.Unlock()
	if p == nil {
		t.Fatalf("reflabeler: emit %q on %s: the labeler is not running", s.Val, s.URI)
	}
	w, err := p.create(wireLabel{
		URI: s.URI, CID: s.CID, Val: s.Val, Neg: s.Neg,
		Cts: formatTime(s.Cts), Exp: formatTime(s.Exp),
	}, RequestTimeout)
	if err != nil {
		t.Fatalf("reflabeler: emit %q on %s: %v", s.Val, s.URI, err)
	}
	return Label{Seq: w.ID, Src: w.Src, URI: w.URI, CID: w.CID, Val: w.Val, Neg: w.Neg, Cts: w.Cts, Exp: w.Exp}
}

// formatTime renders t as JavaScript's toISOString does (UTC,
// milliseconds), a valid atproto datetime; "" for the zero time.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}
