package storage

import "context"

// Full-text search runs over the declared text indexes of a collection
// (FieldIndexText): each is a field path whose string value, or whose
// array's string elements, a record's search document holds. The document
// is kept in the records' own transaction by triggers on the records
// table, on every write path; a text index declared over stored records is
// filled by the background build (BuildFieldIndexes) and searched once it
// is ready. docs/queries.md (section Search) documents the query syntax,
// the ranking, and how SQLite and PostgreSQL differ.

// Limits of full-text search.
const (
	// DefaultSearchLimit is the page size of a search without a limit.
	DefaultSearchLimit = 20
	// MaxSearchLimit is the largest page size of a search.
	MaxSearchLimit = 100
	// MaxSearchQueryLen bounds a search query, in bytes.
	MaxSearchQueryLen = 512
	// MaxSearchTerms bounds the words and phrases of a search query
	// (each word of a phrase counts, and a negated word too).
	MaxSearchTerms = 16
	// MaxTextIndexes bounds the text indexes of one collection: a
	// record's search document has that many fields (PostgreSQL tells
	// them apart by the four tsvector weights).
	MaxTextIndexes = 4
	// MaxSearchFieldText bounds the text of one field of one record that
	// is indexed, in characters; the rest is not searchable.
	MaxSearchFieldText = 65536
)

// SearchConfigSetting is the instance setting (SettingsStore) that names
// PostgreSQL's text-search configuration for the text indexes declared
// after it is set ("simple" when unset: no stemming, no stop words).
// SQLite ignores it.
const SearchConfigSetting = "search.text_config"

// DefaultSearchConfig is the text-search configuration used when
// SearchConfigSetting is not set.
const DefaultSearchConfig = "simple"

// SearchQuery is a full-text search of one collection's records.
type SearchQuery struct {
	// Collection is the collection searched (required).
	Collection string
	// Query is what to look for, in the search syntax: words (all must
	// match), "quoted phrases", OR between alternatives, -word or
	// -"phrase" to exclude, word* for a prefix (docs/queries.md).
	Query string
	// Fields restricts the search to these text-indexed paths of the
	// collection (each must be a ready text index); empty searches every
	// ready text index of the collection.
	Fields []string
	// DID restricts the search to one repository's records.
	DID string
	// Limit is the page size: <= 0 means DefaultSearchLimit; more than
	// MaxSearchLimit is refused.
	Limit int
	// Cursor continues a previous page: an opaque value from
	// SearchPage.Cursor of the same search (same collection, query,
	// fields and DID); any other cursor is refused.
	Cursor string
	// ExcludeInvalid leaves out the records stored with a validation
	// error (Record.Invalid): what the validation mode hide serves.
	ExcludeInvalid bool
}

// SearchHit is one record a search found, with its rank.
type SearchHit struct {
	// Record is read for serving, as QueryRecords reads it: its URI
	// (and the DID, collection and record key it names), CID, Value and
	// CreatedAt, not its Rev or IndexedAt.
	Record Record
	// Rank is how well the record matches: higher is better. Ranks
	// compare within one search only, and their scale differs between
	// backends (BM25 on SQLite, cover density on PostgreSQL).
	Rank float64
}

// SearchPage is one page of a search, best matches first (rank
// descending, then URI ascending); Cursor is "" on the last page.
type SearchPage struct {
	Hits   []SearchHit
	Cursor string
}

// SearchStore serves full-text search over declared text indexes.
type SearchStore interface {
	// SearchRecords returns a page of the records of q.Collection whose
	// text-indexed fields match q.Query. A malformed query, a collection
	// or field without a ready text index, a bad limit or a cursor of
	// another search is refused with an error wrapping ErrInvalidQuery
	// that says why; no query text ever reaches the database as SQL or
	// as the database's own search syntax.
	SearchRecords(ctx context.Context, q SearchQuery) (SearchPage, error)
}
