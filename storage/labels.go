package storage

import (
	"context"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"
)

// Labeler statuses.
const (
	LabelerActive = "active" // subscribed: its labels stream in
	LabelerPaused = "paused" // not connected; its cursor and labels are kept
)

// Labeler is a subscription to a labeler's label stream.
type Labeler struct {
	DID    string
	Status string // LabelerActive or LabelerPaused
	// Cursor is the sequence number of the last event stored from the
	// labeler's stream; nil before the first one.
	Cursor    *int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Label is a label as a labeler emitted it (com.atproto.label.defs#label),
// checked and normalised: times in UTC.
type Label struct {
	Src string // the labeler's DID
	// URI is the subject: an AT URI (a record, or a repository as at://did)
	// or a bare DID (an account).
	URI string
	// CID pins the label to one version of a record; "" for any version.
	CID string
	Val string
	// Neg marks a negation: the label (Src, URI, Val) no longer applies.
	Neg bool
	Cts time.Time // when the labeler created the label
	// Exp is when the label stops applying; zero for never.
	Exp time.Time
	// Sig is the labeler's signature over the label, kept so the label
	// can be handed on verifiable; nil when unsigned (never stored from a
	// subscription, which refuses unsigned labels).
	Sig []byte
	Ver int64 // the label format version (1)
}

// AppliesAt reports whether the label applies at now: not a negation and
// not expired.
func (l Label) AppliesAt(now time.Time) bool {
	return !l.Neg && (l.Exp.IsZero() || now.Before(l.Exp))
}

// LabelBatch is what one event of a labeler's stream carries: its labels
// and the event's sequence number.
type LabelBatch struct {
	Src    string
	Labels []Label
	// Cursor is the sequence number of the event, stored as the labeler's
	// cursor with the labels.
	Cursor int64
}

// LabelStore keeps labelers and their labels.
//
// A label is identified by (Src, URI, Val): the stored one is the latest
// by Cts, a negation included, so an older label replayed after a newer
// one or after its negation changes nothing. A label that does not apply
// (negated, expired) is kept until the labeler is deleted, and
// LabelsFor leaves it out.
type LabelStore interface {
	// PutLabeler adds a labeler with status LabelerActive, or sets an
	// existing one active again (its cursor and labels are kept); created
	// reports which.
	PutLabeler(ctx context.Context, did string, at time.Time) (created bool, err error)
	// GetLabeler returns one labeler or ErrNotFound.
	GetLabeler(ctx context.Context, did string) (Labeler, error)
	// ListLabelers returns every labeler, oldest first.
	ListLabelers(ctx context.Context) ([]Labeler, error)
	// SetLabelerStatus sets a labeler's status (LabelerActive or
	// LabelerPaused), keeping its cursor. ErrNotFound when absent.
	SetLabelerStatus(ctx context.Context, did, status string, at time.Time) error
	// DeleteLabeler removes a labeler and every label it emitted, in one
	// transaction. ErrNotFound when absent.
	DeleteLabeler(ctx context.Context, did string) error
	// ApplyLabels stores the labels of one event (each replacing the
	// stored label with its (Src, URI, Val) unless that one is newer) and
	// sets the labeler's cursor to b.Cursor, in one transaction. Every
	// label's Src must be b.Src. ErrNotFound, and nothing stored, when
	// the labeler does not exist (deleted meanwhile).
	ApplyLabels(ctx context.Context, b LabelBatch) error
	// LabelsFor returns the labels that apply at now (Label.AppliesAt) to
	// each subject (AT URIs or DIDs), keyed by subject, each subject's
	// labels ordered by Src, then Val. Subjects without labels are absent.
	LabelsFor(ctx context.Context, subjects []string, now time.Time) (map[string][]Label, error)
}

// LabelSubjects lists the subjects whose labels concern records: each
// record's AT URI, and each record's author (its DID) once.
func LabelSubjects(uris []string) []string {
	subjects := make([]string, 0, 2*len(uris))
	authors := make(map[string]bool, len(uris))
	for _, u := range uris {
		subjects = append(subjects, u)
		if at, err := syntax.ParseATURI(u); err == nil {
			if did := at.Authority().String(); !authors[did] {
				authors[did] = true
				subjects = append(subjects, did)
			}
		}
	}
	return subjects
}
