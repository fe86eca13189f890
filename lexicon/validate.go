package lexicon

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/bluesky-social/indigo/atproto/atdata"
	indigolex "github.com/bluesky-social/indigo/atproto/lexicon"
)

// ErrNoRecordLexicon is returned when a record's collection has no record
// lexicon in the snapshot.
var ErrNoRecordLexicon = errors.New("no record lexicon for the collection")

// catalog is the validation view of a snapshot, built on first use: the
// indigo catalog and each record lexicon compiled for the fast path.
type catalog struct {
	once    sync.Once
	base    *indigolex.BaseCatalog
	records map[string]*node
}

// lenientCatalog resolves references to lexicons the instance holds, and
// treats references to any other lexicon as `unknown`: records that embed
// types from lexicons never uploaded (a strongRef, a Bluesky embed) are
// validated for everything the instance does know.
type lenientCatalog struct{ base *indigolex.BaseCatalog }

func (c lenientCatalog) Resolve(ref string) (*indigolex.Schema, error) {
	s, err := c.base.Resolve(ref)
	if err != nil {
		return &indigolex.Schema{ID: ref, Def: indigolex.SchemaUnknown{Type: "unknown"}}, nil
	}
	return s, nil
}

func (s *Snapshot) catalog() *catalog {
	s.cat.once.Do(func() {
		s.cat.base = indigolex.NewBaseCatalog()
		known := map[string]bool{}
		for _, id := range s.ids {
			var sf indigolex.SchemaFile
			if err := json.Unmarshal(s.byID[id].Raw, &sf); err != nil {
				continue // documents were checked at upload
			}
			if s.cat.base.AddSchemaFile(sf) == nil {
				for name := range sf.Defs {
					known[sf.ID+"#"+name] = true
				}
			}
		}
		c := compiler{cat: lenientCatalog{s.cat.base}, refs: map[string]*node{}, known: known}
		s.cat.records = make(map[string]*node, len(s.collections))
		for _, collection := range s.collections {
			s.cat.records[collection] = c.record(collection)
		}
	})
	return &s.cat
}

// ValidateRecord checks a record's JSON against the record lexicon of its
// collection, with indigo's LenientMode rules: datetimes and legacy blobs
// are accepted leniently, as network data requires. Records the fast path
// (compile.go) vouches for skip indigo's validator; the rest, including
// every invalid record, go through it.
func (s *Snapshot) ValidateRecord(collection string, raw json.RawMessage) error {
	l, ok := s.byID[collection]
	if !ok || l.Kind != KindRecord {
		return ErrNoRecordLexicon
	}
	if rec := s.catalog().records[collection]; rec != nil && fastValid(rec, collection, raw) {
		return nil
	}
	return s.validateIndigo(collection, raw)
}

// validateIndigo is the reference validation: decode into atproto data,
// then indigo's validator.
func (s *Snapshot) validateIndigo(collection string, raw json.RawMessage) error {
	data, err := atdata.UnmarshalJSON(raw)
	if err != nil {
		return fmt.Errorf("record is not valid atproto data: %w", err)
	}
	if _, typed := data["$type"]; !typed {
		data["$type"] = collection
	}
	if err := indigolex.ValidateRecord(lenientCatalog{s.catalog().base}, data, collection, indigolex.LenientMode); err != nil {
		return fmt.Errorf("record does not match lexicon %s: %w", collection, err)
	}
	return nil
}
