// Package records is the service for browsing and removing indexed
// records as an operator: the admin listing (one collection or all, one
// account or all), deleting records by AT URI and deleting a collection.
package records

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
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

// Service browses and removes records.
type Service struct {
	store  Store
	events *eventlog.Log
	labels LabelReader
}

// New returns the service; labels may be nil (records then show none).
func New(store Store, events *eventlog.Log, labels LabelReader) *Service {
	return &Service{store: store, events: events, labels: labels}
}

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
// many of them were indexed (record.deleted).
func (s *Service) Delete(ctx context.Context, actor string, uris []string) (int, error) {
	if len(uris) == 0 || len(uris) > MaxDelete {
		return 0, fail.Invalidf("uris must hold 1 to %d AT URIs", MaxDelete)
	}
	seen := make(map[string]bool, len(uris))
	var distinct []string
	for _, raw := range uris {
		if err := validRecordURI(raw); err != nil {
			return 0, err
		}
		if !seen[raw] {
			seen[raw] = true
			distinct = append(distinct, raw)
		}
	}
	var deleted []string
	ops := make([]storage.RecordOp, len(distinct))
	for i, uri := range distinct {
		_, err := s.store.GetRecord(ctx, uri)
		switch {
		case err == nil:
			deleted = append(deleted, uri)
		case !errors.Is(err, storage.ErrNotFound):
			return 0, err
		}
		ops[i] = storage.RecordOp{Delete: true, Record: storage.Record{URI: uri}}
	}
	if err := s.store.ApplyBatch(ctx, storage.Batch{Ops: ops}); err != nil {
		return 0, err
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

// validRecordURI accepts at://DID/collection/rkey, the form records are
// indexed under.
func validRecordURI(raw string) error {
	u, err := syntax.ParseATURI(raw)
	if err != nil {
		return fail.New(fail.Invalid, fmt.Sprintf("invalid AT URI %q", raw))
	}
	if _, err := u.Authority().AsDID(); err != nil || u.Collection() == "" || u.RecordKey() == "" {
		return fail.New(fail.Invalid, fmt.Sprintf("invalid AT URI %q: want at://DID/collection/rkey", raw))
	}
	return nil
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
