// Package backlinks answers questions about the link index: which records
// link to a subject from a source, how many, and from which accounts. It
// is the one place these queries are checked, for the built-in
// blue.microcosm.links.* XRPC methods (Constellation's API) and for
// scripts' db.backlinks and db.backlinkCount alike. Refusals are Invalid
// errors with a message safe to show; the index itself is the store's
// (storage.LinkStore).
package backlinks

import (
	"context"
	"errors"
	"fmt"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/storage"
)

// The built-in XRPC methods, Constellation's names.
const (
	MethodGetBacklinks      = "blue.microcosm.links.getBacklinks"
	MethodGetBacklinksCount = "blue.microcosm.links.getBacklinksCount"
	MethodGetBacklinkDids   = "blue.microcosm.links.getBacklinkDids"
)

// Methods lists the built-in XRPC methods the service answers.
var Methods = []string{MethodGetBacklinks, MethodGetBacklinksCount, MethodGetBacklinkDids}

// Store is the link index as the service reads it (storage.LinkStore).
type Store interface {
	Backlinks(ctx context.Context, q storage.BacklinkQuery) (storage.BacklinkPage, error)
	CountBacklinks(ctx context.Context, q storage.BacklinkCountQuery) (storage.BacklinkCount, error)
	BacklinkDIDs(ctx context.Context, q storage.BacklinkDIDQuery) (storage.BacklinkDIDPage, error)
}

// Service answers backlink queries. Its methods have the store's
// signatures, so that a consumer can take either.
type Service struct{ store Store }

// New returns a Service over store.
func New(store Store) *Service { return &Service{store: store} }

// maxCursorLen bounds a cursor passed back: the store's cursors are far
// shorter, and a longer one is not one of them.
const maxCursorLen = 1024

// ErrNoSubject refuses a query without a subject.
var ErrNoSubject = fail.New(fail.Invalid, "subject is required (an AT URI, a DID or a URI)")

// ParseSource parses a source written "collection:path"
// (storage.ParseLinkSource) into an Invalid error when it is not one.
func ParseSource(s string) (storage.LinkSource, error) {
	if s == "" {
		return storage.LinkSource{}, fail.New(fail.Invalid, "source is required (collection:path, for example app.bsky.feed.like:subject.uri)")
	}
	src, err := storage.ParseLinkSource(s)
	if err != nil {
		return storage.LinkSource{}, invalid(err)
	}
	return src, nil
}

// Backlinks returns a page of the records linking to q.Subject from
// q.Source, newest first, with the total the query's accounts admit.
// A subject that is not an AT URI, a DID or a URI, an account that is
// not a DID, more than storage.MaxBacklinkDIDs accounts, a limit over
// storage.MaxBacklinkLimit (<= 0 is the default) or a cursor that is not
// one of this query's are Invalid. Repeated accounts count once.
func (s *Service) Backlinks(ctx context.Context, q storage.BacklinkQuery) (storage.BacklinkPage, error) {
	if err := checkQuery(q.Subject, q.Source, q.Limit, q.Cursor); err != nil {
		return storage.BacklinkPage{}, err
	}
	dids, err := checkDIDs(q.DIDs)
	if err != nil {
		return storage.BacklinkPage{}, err
	}
	q.DIDs = dids
	page, err := s.store.Backlinks(ctx, q)
	if err != nil {
		return storage.BacklinkPage{}, storeErr(err)
	}
	return page, nil
}

// CountBacklinks counts the records linking to q.Subject from q.Source
// and, if q.DIDs, the distinct accounts they belong to (which costs time
// in proportion to them; the records' count is kept).
func (s *Service) CountBacklinks(ctx context.Context, q storage.BacklinkCountQuery) (storage.BacklinkCount, error) {
	if err := checkQuery(q.Subject, q.Source, 0, ""); err != nil {
		return storage.BacklinkCount{}, err
	}
	n, err := s.store.CountBacklinks(ctx, q)
	if err != nil {
		return storage.BacklinkCount{}, storeErr(err)
	}
	return n, nil
}

// CountLinkingRecords counts the records linking to subject from source,
// without the distinct accounts (which cost more to count). Its refusals
// are CountBacklinks'.
func (s *Service) CountLinkingRecords(ctx context.Context, subject string, source storage.LinkSource) (int64, error) {
	if err := checkQuery(subject, source, 0, ""); err != nil {
		return 0, err
	}
	n, err := s.store.CountBacklinks(ctx, storage.BacklinkCountQuery{Subject: subject, Source: source})
	if err != nil {
		return 0, storeErr(err)
	}
	return n.Records, nil
}

// BacklinkDIDs returns a page of the distinct accounts linking to
// q.Subject from q.Source, in DID order, with their total. Its refusals
// are Backlinks'.
func (s *Service) BacklinkDIDs(ctx context.Context, q storage.BacklinkDIDQuery) (storage.BacklinkDIDPage, error) {
	if err := checkQuery(q.Subject, q.Source, q.Limit, q.Cursor); err != nil {
		return storage.BacklinkDIDPage{}, err
	}
	page, err := s.store.BacklinkDIDs(ctx, q)
	if err != nil {
		return storage.BacklinkDIDPage{}, storeErr(err)
	}
	return page, nil
}

// checkQuery checks what every backlink query has.
func checkQuery(subject string, source storage.LinkSource, limit int, cursor string) error {
	if err := checkSubject(subject); err != nil {
		return err
	}
	if source.Collection == "" || source.Path == "" {
		return fail.New(fail.Invalid, "source is required (collection:path, for example app.bsky.feed.like:subject.uri)")
	}
	if limit > storage.MaxBacklinkLimit {
		return fail.Invalidf("limit must be between 1 and %d", storage.MaxBacklinkLimit)
	}
	if len(cursor) > maxCursorLen {
		return fail.New(fail.Invalid, "invalid cursor")
	}
	return nil
}

// checkSubject refuses a subject that cannot be a link target: empty,
// longer than any indexed target, or not "scheme:..." (an AT URI, a DID
// and an http(s) URI all are), or holding spaces or control characters.
func checkSubject(s string) error {
	switch {
	case s == "":
		return ErrNoSubject
	case len(s) > storage.MaxLinkTargetLen:
		return fail.Invalidf("subject is longer than %d bytes", storage.MaxLinkTargetLen)
	case !uriShaped(s):
		return fail.New(fail.Invalid, "subject must be an AT URI, a DID or a URI")
	}
	return nil
}

// uriShaped reports whether s is a URI scheme (a letter, then letters,
// digits, "+", "-" or "."), a colon and a non-empty rest without spaces or
// control characters.
func uriShaped(s string) bool {
	colon := -1
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c == 0x7f {
			return false
		}
		if colon >= 0 {
			continue
		}
		switch {
		case c == ':':
			if i == 0 {
				return false
			}
			colon = i
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return colon > 0 && colon < len(s)-1
}

// checkDIDs checks the accounts a listing is filtered by and returns them
// in a new slice, each once.
func checkDIDs(dids []string) ([]string, error) {
	if len(dids) == 0 {
		return nil, nil
	}
	out := make([]string, 0, len(dids))
	seen := make(map[string]bool, len(dids))
	for _, d := range dids {
		if _, err := syntax.ParseDID(d); err != nil {
			return nil, fail.Invalidf("did %q is not a DID", clip(d, 64))
		}
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	if len(out) > storage.MaxBacklinkDIDs {
		return nil, fail.Invalidf("at most %d accounts (did) per query", storage.MaxBacklinkDIDs)
	}
	return out, nil
}

// storeErr is a store failure as the caller sees it: a refused query is
// Invalid, with the store's reason; anything else is internal.
func storeErr(err error) error {
	if errors.Is(err, storage.ErrInvalidBacklinkQuery) {
		return invalid(err)
	}
	return fmt.Errorf("backlinks: %w", err)
}

// invalid is a storage.ErrInvalidBacklinkQuery refusal as an Invalid
// error whose message is its text ("invalid backlink query: ...").
func invalid(err error) error { return fail.New(fail.Invalid, err.Error()) }

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
