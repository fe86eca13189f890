package indexer

import "time"

// Refusal is one change validation refused, as Writer.Refusals lists it.
type Refusal struct {
	At     time.Time `json:"at"`
	Source string    `json:"source"` // who submitted it (an event source's name, "backfill", ...)
	URI    string    `json:"uri"`    // the record's AT URI
	// Collection is the record's collection, or "(invalid)" when it is
	// not an NSID.
	Collection string `json:"collection"`
	Reason     string `json:"reason"` // why it was refused
}

// MaxRefusals is how many refusals Writer.Refusals keeps.
const MaxRefusals = 50

// maxRefusalText bounds a refusal's URI and reason (an invalid change's
// identifiers can be any string).
const maxRefusalText = 500

// refusalRing keeps the latest MaxRefusals refusals; the Writer's mu
// guards it.
type refusalRing struct {
	items []Refusal // at most MaxRefusals, oldest first from next
	next  int       // where the next one goes once items is full
}

func (r *refusalRing) add(f Refusal) {
	if len(r.items) < MaxRefusals {
		r.items = append(r.items, f)
		return
	}
	r.items[r.next] = f
	r.next = (r.next + 1) % MaxRefusals
}

// latest returns the refusals, newest first.
func (r *refusalRing) latest() []Refusal {
	out := make([]Refusal, 0, len(r.items))
	for i := range r.items {
		j := (r.next - 1 - i + 2*len(r.items)) % len(r.items)
		out = append(out, r.items[j])
	}
	return out
}

// Refusals returns the latest changes validation refused (at most
// MaxRefusals, kept in memory since the writer was made), newest first.
func (w *Writer) Refusals() []Refusal {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.refusals.latest()
}
