package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The link index records, for every stored record, the links it holds:
// string values anywhere in the record that are AT URIs, DIDs or http(s)
// URIs (see ExtractLinks). It answers "which records link to this target
// from this place" (backlinks) and "how many", the questions behind likes,
// replies, follows, mentions and quotes, from an index rather than a scan.
// The index is kept in the same transaction as the records, by every write
// path: an upsert replaces the record's links, a delete removes them.

// Limits of the link index.
const (
	// DefaultBacklinkLimit is the page size of a backlinks listing
	// without a limit (Constellation's default).
	DefaultBacklinkLimit = 16
	// MaxBacklinkLimit is the largest page size of a backlinks listing.
	MaxBacklinkLimit = 100
	// MaxBacklinkDIDs bounds the accounts a backlinks listing may filter by.
	MaxBacklinkDIDs = 100
	// MaxLinksPerRecord bounds the links indexed for one record; the rest
	// are skipped and counted (LinkIndexStatus.Skipped).
	MaxLinksPerRecord = 128
	// MaxLinkDepth bounds how deep in a record links are looked for: a
	// value nested deeper than this many objects and arrays is skipped.
	MaxLinkDepth = 32
	// MaxLinkTargetLen bounds the length of an indexed link target, in
	// bytes; a longer one is skipped.
	MaxLinkTargetLen = 2048
	// MaxLinkPathLen bounds the length of a link's path, in bytes; a link
	// at a longer path is skipped.
	MaxLinkPathLen = 512
)

// ErrInvalidBacklinkQuery wraps every refusal of a backlink query (a bad
// subject, source, account, limit or cursor).
var ErrInvalidBacklinkQuery = errors.New("invalid backlink query")

// LinkSource names where links come from: the collection of the linking
// records and the path of the link inside them. It is written
// "collection:path", as Constellation's source parameter is, for example
// "app.bsky.feed.like:subject.uri".
//
// A path names object members with dots between them. An array element
// is written "[]", or "[T]" when the element is an object whose $type is
// T: the mention DIDs of a Bluesky post are at
// "facets[app.bsky.richtext.facet].features[app.bsky.richtext.facet#mention].did"
// (a facet without a $type: "facets[].features[...]"). This is the
// notation of Constellation's index, so that a source written for it
// works here unchanged.
type LinkSource struct {
	Collection string
	Path       string
}

// String returns the source as "collection:path".
func (s LinkSource) String() string { return s.Collection + ":" + s.Path }

// ParseLinkSource parses "collection:path". A leading dot of the path is
// accepted and dropped (Constellation's older notation).
func ParseLinkSource(s string) (LinkSource, error) {
	collection, path, ok := strings.Cut(s, ":")
	path = strings.TrimPrefix(path, ".")
	switch {
	case !ok || collection == "" || path == "":
		return LinkSource{}, fmt.Errorf("%w: source must be collection:path, for example app.bsky.feed.like:subject.uri", ErrInvalidBacklinkQuery)
	case len(collection) > 317 || !validNSIDShape(collection):
		return LinkSource{}, fmt.Errorf("%w: source collection %q is not an NSID", ErrInvalidBacklinkQuery, truncate(collection, 64))
	case len(path) > MaxLinkPathLen:
		return LinkSource{}, fmt.Errorf("%w: source path longer than %d bytes", ErrInvalidBacklinkQuery, MaxLinkPathLen)
	}
	return LinkSource{Collection: collection, Path: path}, nil
}

// validNSIDShape is a cheap check that s looks like an NSID: dot-separated
// segments of letters, digits and hyphens, at least three of them.
func validNSIDShape(s string) bool {
	segments := strings.Split(s, ".")
	if len(segments) < 3 {
		return false
	}
	for _, seg := range segments {
		if seg == "" || len(seg) > 63 {
			return false
		}
		for i := 0; i < len(seg); i++ {
			c := seg[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// BacklinkQuery selects the records linking to Subject from Source,
// newest first (by the linking record's CreatedAt, then URI).
type BacklinkQuery struct {
	// Subject is the link target: an AT URI, a DID or a URI.
	Subject string
	Source  LinkSource
	// DIDs keeps only links from these accounts (at most MaxBacklinkDIDs);
	// empty keeps every account.
	DIDs []string
	// Limit is the page size: <= 0 means DefaultBacklinkLimit; more than
	// MaxBacklinkLimit is refused.
	Limit int
	// Cursor continues a previous page of the same query.
	Cursor string
}

// Backlink is one record linking to a subject.
type Backlink struct {
	URI        string // the linking record's AT URI
	DID        string
	Collection string
	RKey       string
	CreatedAt  time.Time // the linking record's CreatedAt
}

// BacklinkPage is a page of backlinks. Total counts every record linking
// to the subject from the source that the query's DIDs admit, not only
// this page's; Cursor is set when more records follow.
type BacklinkPage struct {
	Total   int64
	Records []Backlink
	Cursor  string
}

// BacklinkCountQuery selects what CountBacklinks counts: the records
// linking to Subject from Source, and with DIDs also the distinct
// accounts they belong to (a count that costs more).
type BacklinkCountQuery struct {
	Subject string
	Source  LinkSource
	DIDs    bool
}

// BacklinkCount counts the records linking to a subject from a source,
// and the distinct accounts they belong to (0 unless asked for).
type BacklinkCount struct {
	Records int64
	DIDs    int64
}

// BacklinkDIDQuery selects the distinct accounts linking to Subject from
// Source, in DID order.
type BacklinkDIDQuery struct {
	Subject string
	Source  LinkSource
	Limit   int // as BacklinkQuery.Limit
	Cursor  string
}

// BacklinkDIDPage is a page of linking accounts. Total counts every
// distinct account linking to the subject from the source.
type BacklinkDIDPage struct {
	Total  int64
	DIDs   []string
	Cursor string
}

// LinkIndexStatus describes the link index. Records written since the
// index exists are indexed as they are written; the records stored before
// are indexed by a background pass (IndexStoredLinks), which Done reports
// finished.
type LinkIndexStatus struct {
	// Done is true once every record stored before the index existed has
	// been indexed.
	Done bool
	// Scanned counts the stored records the background pass has read.
	Scanned int64
	// Skipped counts the links this process did not index because a
	// record exceeded a bound (MaxLinksPerRecord, MaxLinkDepth,
	// MaxLinkTargetLen, MaxLinkPathLen), since it started.
	Skipped int64
}

// LinkStore answers backlink queries from the link index and builds the
// index over records stored before it existed.
type LinkStore interface {
	// Backlinks returns a page of the records linking to q.Subject from
	// q.Source. Invalid queries and cursors return an error wrapping
	// ErrInvalidBacklinkQuery.
	Backlinks(ctx context.Context, q BacklinkQuery) (BacklinkPage, error)
	// CountBacklinks counts the records linking to q.Subject from
	// q.Source, and with q.DIDs their distinct accounts.
	CountBacklinks(ctx context.Context, q BacklinkCountQuery) (BacklinkCount, error)
	// BacklinkDIDs returns a page of the distinct accounts linking to
	// q.Subject from q.Source.
	BacklinkDIDs(ctx context.Context, q BacklinkDIDQuery) (BacklinkDIDPage, error)
	// LinkIndexStatus reports the index's state.
	LinkIndexStatus(ctx context.Context) (LinkIndexStatus, error)
	// IndexStoredLinks indexes the links of up to n records stored before
	// the index existed, in one short transaction, continuing where the
	// previous call stopped (the position is stored, so the pass resumes
	// after a restart). It reports done once no such record is left; it
	// never blocks live writes for longer than one such transaction.
	IndexStoredLinks(ctx context.Context, n int) (done bool, err error)
}
