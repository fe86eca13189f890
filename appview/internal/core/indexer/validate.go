package indexer

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lexview/lexview/internal/textclip"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
)

// check is a validation of one change against a lexicon snapshot.
type check func(snap *lexicon.Snapshot, c storage.Change) error

// prepare validates changes with valid into a queue item (nil when nothing
// is left to write).
func (w *Writer) prepare(source string, changes []storage.Change, cursor *storage.StreamCursor, valid check) (*item, Result) {
	snap := w.lexicons.Snapshot()
	now := w.opt.Now()
	var res Result
	kept := make([]storage.Change, 0, len(changes))
	for _, c := range changes {
		label := collectionLabel(snap, c.Collection)
		w.opt.Metrics.Received(source, label)
		if c.Received.IsZero() {
			c.Received = now
		}
		c.Invalid = ""
		if err := valid(snap, c); err != nil {
			if reason, ok := w.storable(c, err); ok {
				c.Invalid = reason
				res.Flagged = append(res.Flagged, Rejection{URI: c.URI(), Err: err})
				w.flag(source, label)
				kept = append(kept, c)
				continue
			}
			res.Rejected = append(res.Rejected, Rejection{URI: c.URI(), Err: err})
			w.reject(source, label, c, err)
			continue
		}
		kept = append(kept, c)
	}
	res.Accepted = len(kept)
	if len(kept) == 0 && cursor == nil {
		return nil, res
	}
	return &item{source: source, changes: kept, cursor: cursor, done: make(chan struct{})}, res
}

// Mode is a collection's validation mode: what the writer does with a
// record its lexicon refuses.
type Mode string

// The validation modes.
const (
	// ModeReject refuses the record: it is not stored (counted, logged
	// and listed among the refusals).
	ModeReject Mode = "reject"
	// ModeFlag stores the record with its validation error, and it is
	// served like any other.
	ModeFlag Mode = "flag"
	// ModeHide stores the record with its validation error, but the
	// default and scripted queries leave it out unless asked for it.
	ModeHide Mode = "hide"
	// ModeOff does not validate the collection's records against their
	// lexicon at all (malformed changes are still refused).
	ModeOff Mode = "off"
)

// ParseMode reads a mode by name (case-insensitively).
func ParseMode(s string) (Mode, bool) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case ModeReject, ModeFlag, ModeHide, ModeOff:
		return m, true
	}
	return "", false
}

// Stores reports whether the mode stores invalid records (flag, hide).
func (m Mode) Stores() bool { return m == ModeFlag || m == ModeHide }

// mode returns collection's validation mode.
func (w *Writer) mode(collection string) Mode {
	if w.opt.Validation == nil {
		return ModeReject
	}
	return w.opt.Validation(collection)
}

// invalidRecord is a record's refusal by its lexicon: the one refusal
// that the modes flag and hide store instead (never a malformed change,
// nor a record of a collection without a record lexicon).
type invalidRecord struct{ err error }

func (e invalidRecord) Error() string { return e.err.Error() }
func (e invalidRecord) Unwrap() error { return e.err }

// storable reports whether change c, refused with err, is stored anyway
// with its validation error (the collection's mode flags or hides
// invalid records), and that error, cut to storage.MaxInvalidReason.
func (w *Writer) storable(c storage.Change, err error) (string, bool) {
	var inv invalidRecord
	if !errors.As(err, &inv) || !w.mode(c.Collection).Stores() {
		return "", false
	}
	return ClipReason(err.Error()), true
}

// ClipReason cuts a validation error to what a record stores: at most
// storage.MaxInvalidReason bytes, cut at a character boundary (marked
// with "…"); never empty.
func ClipReason(reason string) string {
	if reason == "" {
		return "invalid"
	}
	if len(reason) <= storage.MaxInvalidReason {
		return reason
	}
	return textclip.Clip(reason, storage.MaxInvalidReason-len("…"))
}

// flag counts an invalid record stored with its error.
func (w *Writer) flag(source, collection string) {
	w.opt.Metrics.Flagged(source, collection)
	w.mu.Lock()
	w.stats.Flagged++
	w.mu.Unlock()
}

// ErrMalformed is wrapped by the rejection of a change whose identifiers
// or record text are malformed (as opposed to a record its lexicon
// refuses): a DID, collection NSID, record key, CID or rev that does not
// parse, or a record that is not storable Unicode text
// (lexicon.CheckRecordText).
var ErrMalformed = errors.New("malformed change")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
}

// invalidCollection is the label (metrics, rejection counts) of changes
// whose collection is not an NSID: their collection may be any string,
// and labels must stay few.
const invalidCollection = "(invalid)"

// collectionLabel returns collection when it is an NSID (at once for the
// collections of lexicons, which are), else invalidCollection.
func collectionLabel(snap *lexicon.Snapshot, collection string) string {
	if _, ok := snap.Get(collection); ok {
		return collection
	}
	if err := lexicon.CheckNSID(collection); err != nil {
		return invalidCollection
	}
	return collection
}

// validate checks a change before it is queued: its identifiers, then
// (creates and updates) its record's text and its record against the
// collection's lexicon.
func (w *Writer) validate(snap *lexicon.Snapshot, c storage.Change) error {
	if err := checkIdentifiers(c); err != nil {
		return err
	}
	if c.Op == storage.OpDelete {
		if l, ok := snap.Get(c.Collection); !ok || l.Kind != lexicon.KindRecord {
			return lexicon.ErrNoRecordLexicon
		}
		return nil
	}
	if c.Op != storage.OpCreate && c.Op != storage.OpUpdate {
		return fmt.Errorf("unknown operation %q", c.Op)
	}
	if len(c.Record) == 0 {
		return errors.New("write lacks a record")
	}
	if err := lexicon.CheckRecordText(c.Record); err != nil {
		return malformed("%w", err)
	}
	err := w.checkRecord(snap, c.Collection, c.Record)
	if err == nil || errors.Is(err, lexicon.ErrNoRecordLexicon) {
		return err
	}
	return invalidRecord{err}
}

// validateRemoval checks a removal (Writer.Remove): a delete with valid
// identifiers, of any collection.
func validateRemoval(_ *lexicon.Snapshot, c storage.Change) error {
	if c.Op != storage.OpDelete {
		return fmt.Errorf("a removal must be a delete, not %q", c.Op)
	}
	return checkIdentifiers(c)
}

// CheckRecord reports why a record of collection would be refused when
// written (nil when it would not): the lexicon validation every write
// meets, without writing. A procedure asks before the record reaches the
// PDS, and refuses an invalid record in every validation mode but off: a
// user's own write is refused at the door rather than put into their
// repository invalid (the modes flag and hide are about records the
// network already holds).
func (w *Writer) CheckRecord(collection string, record json.RawMessage) error {
	return w.checkRecord(w.lexicons.Snapshot(), collection, record)
}

func (w *Writer) checkRecord(snap *lexicon.Snapshot, collection string, record json.RawMessage) error {
	if w.mode(collection) == ModeOff {
		if l, ok := snap.Get(collection); !ok || l.Kind != lexicon.KindRecord {
			return lexicon.ErrNoRecordLexicon
		}
		if !json.Valid(record) {
			return errors.New("record is not JSON")
		}
		return nil
	}
	return snap.ValidateRecord(collection, record)
}

// checkIdentifiers checks a change's DID, collection, record key and
// (writes) CID with indigo's syntax rules (lexicon.CheckDID and the
// others: indigo's checks behind a hand-written fast path), and its rev:
// whatever the source, nothing that does not parse is stored or served.
func checkIdentifiers(c storage.Change) error {
	if c.DID == "" || c.Collection == "" || c.RKey == "" {
		return malformed("the change lacks a DID, collection or record key")
	}
	if err := lexicon.CheckDID(c.DID); err != nil {
		return malformed("invalid DID: %w", err)
	}
	if err := lexicon.CheckNSID(c.Collection); err != nil {
		return malformed("invalid collection NSID: %w", err)
	}
	if err := lexicon.CheckRecordKey(c.RKey); err != nil {
		return malformed("invalid record key: %w", err)
	}
	if !validRev(c.Rev) {
		return malformed("invalid rev")
	}
	if c.Op == storage.OpDelete {
		return nil
	}
	if c.CID == "" {
		return malformed("the write lacks a CID")
	}
	if err := lexicon.CheckCID(c.CID); err != nil {
		return malformed("invalid CID: %w", err)
	}
	return nil
}

// maxRev bounds a rev. Revs are TIDs (13 characters) on the network;
// the check is looser (sources and tests use other sortable strings) but
// keeps them short ASCII.
const maxRev = 64

// validRev reports whether rev is empty (unknown) or at most maxRev
// characters of the record-key alphabet (A-Z a-z 0-9 . - _ : ~), which
// holds every TID.
func validRev(rev string) bool {
	if len(rev) > maxRev {
		return false
	}
	for i := 0; i < len(rev); i++ {
		c := rev[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '-' || c == '_' || c == ':' || c == '~') {
			return false
		}
	}
	return true
}

// reject counts a refused change under its collection's label and logs
// it, at most once per label every ten seconds.
func (w *Writer) reject(source, collection string, c storage.Change, err error) {
	w.opt.Metrics.Rejected(source, collection)
	w.mu.Lock()
	w.rejected[collection]++
	w.stats.Rejected++
	now := w.opt.Now()
	w.refusals.add(Refusal{At: now, Source: source, URI: textclip.Clip(c.URI(), maxRefusalText),
		Collection: collection, Reason: textclip.Clip(err.Error(), maxRefusalText)})
	last, seen := w.logged[collection]
	logIt := !seen || now.Sub(last) >= 10*time.Second
	if logIt {
		w.logged[collection] = now
	}
	w.mu.Unlock()
	if logIt {
		w.opt.Logger.Warn("record rejected by validation (further rejections in this collection are counted, logged every 10s)",
			"source", source, "uri", c.URI(), "err", err)
	}
}

// TakeRejections returns and resets the rejection counts per collection
// since the last call. Changes whose collection is not an NSID are
// counted under "(invalid)".
func (w *Writer) TakeRejections() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.rejected
	w.rejected = map[string]int{}
	return out
}
