// Package records is the service for browsing and removing indexed
// records as an operator: the admin listing (one collection or all, one
// account or all), deleting records by AT URI (through the batch writer,
// like every other record change) and deleting a collection.
package records

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/core/indexer"
	"github.com/lexview/lexview/storage"
)

// Limits.
const (
	// MaxDelete bounds the URIs of one Delete.
	MaxDelete = 1000
	// maxAuditedURIs bounds the URIs copied into a record.deleted event.
	maxAuditedURIs = 100
)

// Store is the persistence the service needs.
type Store interface {
	storage.RecordStore
	DeleteCollection(ctx context.Context, collection string) (int64, error)
}

// LabelReader reads the labels that apply to subjects
// (storage.LabelStore).
type LabelReader interface {
	LabelsFor(ctx context.Context, subjects []string, now time.Time) (map[string][]storage.Label, error)
}

// Writer removes records through the batch writer (*indexer.Writer).
type Writer interface {
	Remove(ctx context.Context, source string, changes []storage.Change) (indexer.Result, error)
}

// Source names operator deletions in the writer's metrics and logs.
const Source = "operator"

// Options configure a Service; Store and Writer are required.
type Options struct {
	Store  Store
	Writer Writer
	Events *eventlog.Log
	// Labels shows records' labels; nil: records show none.
	Labels LabelReader
}

// Service browses and removes records.
type Service struct {
	store  Store
	writer Writer
	events *eventlog.Log
	labels LabelReader
}

// New returns the service.
func New(o Options) *Service {
	return &Service{store: o.Store, writer: o.Writer, events: o.Events, labels: o.Labels}
}

var errWriterDown = fail.New(fail.Unavailable, "the record writer is not running")

// Labels returns the labels that apply now to each record of uris and to
// its author, keyed by subject (the record's AT URI, the author's DID).
func (s *Service) Labels(ctx context.Context, uris []string) (map[string][]storage.Label, error) {
	if s.labels == nil || len(uris) == 0 {
		return map[string][]storage.Label{}, nil
	}
	subjects := storage.LabelSubjects(uris)
	return s.labels.LabelsFor(ctx, subjects, time.Now())
}

// Query selects records, by raw values as given: Collection "" means
// every collection, DID nil every account.
type Query struct {
	Collection string
	DID        *string
	Limit      int
	// Cursor continues a listing with the same Collection and DID; ""
	// starts one.
	Cursor string
}

// scope binds admin record cursors to one collection (or all, "") and DID
// filter. It differs from the XRPC listing's scope, so cursors do not
// cross over. Lists go by creation time since storage migration 12
// ("/created"); cursors of the earlier order are refused.
func scope(q storage.ListQuery) string {
	return "admin-records/created\x00" + q.Collection + "\x00" + q.DID
}

// List returns a page of records: those of one collection, or of every
// collection, newest created first (storage.Record.CreatedAt); with a DID, that repository's records in AT
// URI order (collection, then record key), highest first. It returns the
// cursor of the next page ("" on the last one).
func (s *Service) List(ctx context.Context, in Query) ([]storage.Record, string, error) {
	q := storage.ListQuery{Limit: in.Limit}
	if in.Collection != "" {
		nsid, err := syntax.ParseNSID(in.Collection)
		if err != nil {
			return nil, "", fail.New(fail.Invalid, "invalid collection NSID")
		}
		q.Collection = nsid.String()
	}
	if in.DID != nil {
		did, err := syntax.ParseDID(*in.DID)
		if err != nil {
			return nil, "", fail.New(fail.Invalid, "invalid did")
		}
		q.DID = did.String()
	}
	if in.Cursor != "" {
		pos, err := storage.DecodeCursor(scope(q), in.Cursor)
		if err != nil {
			return nil, "", fail.New(fail.Invalid, "invalid cursor")
		}
		q.After = &pos
	}
	page, err := s.store.ListRecords(ctx, q)
	if err != nil || page.Next == nil {
		return page.Records, "", err
	}
	return page.Records, storage.EncodeCursor(scope(q), *page.Next), nil
}

// Delete removes records by AT URI on behalf of actor and returns how
// many indexed records are gone (record.deleted). The deletions go
// through the batch writer (Writer.Remove) like every record change: the
// record-event hooks see them (a hook that keeps a record keeps it
// indexed, and it is not counted) and the writer's metrics count them
// under Source.
func (s *Service) Delete(ctx context.Context, actor string, uris []string) (int, error) {
	if len(uris) == 0 || len(uris) > MaxDelete {
		return 0, fail.Invalidf("uris must hold 1 to %d AT URIs", MaxDelete)
	}
	seen := make(map[string]bool, len(uris))
	var changes []storage.Change
	for _, raw := range uris {
		u, err := recordURI(raw)
		if err != nil {
			return 0, err
		}
		c := storage.Change{Op: storage.OpDelete, DID: u.Authority().String(), Collection: u.Collection().String(),
			RKey: u.RecordKey().String()}
		if !seen[c.URI()] {
			seen[c.URI()] = true
			changes = append(changes, c)
		}
	}
	indexed, err := s.indexed(ctx, changes)
	if err != nil {
		return 0, err
	}
	res, err := s.writer.Remove(ctx, Source, changes)
	switch {
	case errors.Is(err, indexer.ErrNotStarted) || errors.Is(err, indexer.ErrStopped):
		return 0, fail.Wrap(errWriterDown.Kind, errWriterDown.Message, err)
	case err != nil:
		return 0, err
	case len(res.Rejected) > 0:
		r := res.Rejected[0]
		return 0, fail.Wrap(fail.Invalid, fmt.Sprintf("invalid AT URI %q: %v", r.URI, r.Err), r.Err)
	}
	var deleted []string
	for _, uri := range indexed {
		switch _, err := s.store.GetRecord(ctx, uri); {
		case errors.Is(err, storage.ErrNotFound):
			deleted = append(deleted, uri)
		case err != nil:
			return 0, err
		}
	}
	if len(deleted) > 0 {
		subject := ""
		if len(deleted) == 1 {
			subject = deleted[0]
		}
		detail := map[string]any{"deleted": len(deleted), "uris": deleted[:min(len(deleted), maxAuditedURIs)]}
		if len(deleted) > maxAuditedURIs {
			detail["uris_truncated"] = true
		}
		s.events.Record(ctx, eventlog.Entry{Type: "record.deleted", ActorDID: actor, Subject: subject, Detail: detail})
	}
	return len(deleted), nil
}

// indexed returns the URIs of the changes' records that are indexed.
func (s *Service) indexed(ctx context.Context, changes []storage.Change) ([]string, error) {
	var out []string
	for _, c := range changes {
		switch _, err := s.store.GetRecord(ctx, c.URI()); {
		case err == nil:
			out = append(out, c.URI())
		case !errors.Is(err, storage.ErrNotFound):
			return nil, err
		}
	}
	return out, nil
}

// recordURI parses at://DID/collection/rkey, the form records are
// indexed under.
func recordURI(raw string) (syntax.ATURI, error) {
	u, err := syntax.ParseATURI(raw)
	if err != nil {
		return "", fail.New(fail.Invalid, fmt.Sprintf("invalid AT URI %q", raw))
	}
	if _, err := u.Authority().AsDID(); err != nil || u.Collection() == "" || u.RecordKey() == "" {
		return "", fail.New(fail.Invalid, fmt.Sprintf("invalid AT URI %q: want at://DID/collection/rkey", raw))
	}
	return u, nil
}

// DeleteCollection removes every record of a collection on behalf of
// actor and returns how many (collection.deleted).
func (s *Service) DeleteCollection(ctx context.Context, actor, collection string) (int64, error) {
	if collection == "" {
		return 0, fail.New(fail.Invalid, "collection is required")
	}
	nsid, err := syntax.ParseNSID(collection)
	if err != nil {
		return 0, fail.New(fail.Invalid, "invalid collection NSID")
	}
	n, err := s.store.DeleteCollection(ctx, nsid.String())
	if err != nil {
		return 0, err
	}
	s.events.Record(ctx, eventlog.Entry{Type: "collection.deleted", ActorDID: actor, Subject: nsid.String(),
		Detail: map[string]any{"deleted": n}})
	return n, nil
}
