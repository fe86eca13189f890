package scripthost

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/script"
	"github.com/lexview/lexview/storage"
)

// labelScript returns the script a label value triggers: its own
// label.arrive:<value> script, else label.arrive:*.
func (s *snapshot) labelScript(val string) (*bound, bool) {
	if b, ok := s.byTrigger[script.Trigger(script.KindLabel, val)]; ok {
		return b, true
	}
	b, ok := s.byTrigger[script.Trigger(script.KindLabel, script.AnyLabel)]
	return b, ok
}

// LabelsArrived runs the label-arrival scripts of labels that a labeler's
// stream delivered (verified, not stored yet), concurrently. A script's
// result is ignored; a failure is stored as a label dead letter, which can
// be neither retried nor reindexed: the label itself is stored either way.
func (r *Runtime) LabelsArrived(ctx context.Context, labeler string, labels []storage.Label) {
	snap := r.current()
	var todo []int
	for i, l := range labels {
		if _, ok := snap.labelScript(l.Val); ok {
			todo = append(todo, i)
		}
	}
	parallel(todo, func(i int) { r.runLabel(ctx, snap, labels[i]) })
}

// runLabel runs the script of one label and stores its failure.
func (r *Runtime) runLabel(ctx context.Context, snap *snapshot, l storage.Label) {
	b, ok := snap.labelScript(l.Val)
	if !ok {
		return
	}
	ev := labelEvent(l)
	inv := &script.Invocation{Host: r.host(), Kind: script.KindLabel, Method: l.Val, Label: &ev}
	if _, err := b.execute(ctx, inv); err != nil {
		raw, _ := json.Marshal(labelJSON(ev))
		r.recordError(ctx, b, inv, string(raw), err)
		if derr := r.labelDeadLetter(ctx, l, raw, err); derr != nil {
			r.log.Warn("storing a label dead letter failed", "labeler", l.Src, "uri", l.URI, "val", l.Val, "err", derr)
		}
	}
}

// labelDeadLetter stores a failed label arrival. Its subject's DID,
// collection and record key are filled in when the subject is a record.
func (r *Runtime) labelDeadLetter(ctx context.Context, l storage.Label, raw []byte, cause error) error {
	d := storage.DeadLetter{Kind: storage.DeadLetterLabel, URI: l.URI, CID: l.CID, Action: "label",
		Error: clip(cause.Error(), maxErrorText), Attempts: 1, Record: raw}
	if l.Neg {
		d.Action = "negate"
	}
	if strings.HasPrefix(l.URI, "did:") {
		d.DID = l.URI
	} else if u, err := syntax.ParseATURI(l.URI); err == nil {
		d.DID = u.Authority().String()
		d.Collection = u.Collection().String()
		d.RKey = u.RecordKey().String()
		d.LexiconID = d.Collection
	}
	_, err := r.opt.Store.AddDeadLetter(context.WithoutCancel(ctx), d)
	return err
}

// labelEvent is a stored label as scripts see it.
func labelEvent(l storage.Label) script.LabelEvent {
	ev := script.LabelEvent{Src: l.Src, URI: l.URI, CID: l.CID, Val: l.Val, Neg: l.Neg}
	if !l.Cts.IsZero() {
		ev.Cts = l.Cts.UTC().Format(script.TimeLayout)
	}
	if !l.Exp.IsZero() {
		ev.Exp = l.Exp.UTC().Format(script.TimeLayout)
	}
	return ev
}

// labelJSON is a label as a dead letter keeps it (com.atproto.label.defs
// field names).
func labelJSON(ev script.LabelEvent) map[string]any {
	m := map[string]any{"src": ev.Src, "uri": ev.URI, "val": ev.Val, "cts": ev.Cts}
	if ev.CID != "" {
		m["cid"] = ev.CID
	}
	if ev.Neg {
		m["neg"] = true
	}
	if ev.Exp != "" {
		m["exp"] = ev.Exp
	}
	return m
}
