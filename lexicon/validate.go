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

// catalog is the validation view of a snapshot, built on first use.
type catalog struct {
	once sync.Once
	base *indigolex.BaseCatalog
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

func (s *Snapshot) catalog() lenientCatalog {
	s.cat.once.Do(func() {
		s.cat.base = indigolex.NewBaseCatalog()
		for _, id := range s.ids {
			var sf indigolex.SchemaFile
			if err := json.Unmarshal(s.byID[id].Raw, &sf); err != nil {
				continue // documents were checked at upload
			}
			_ = s.cat.base.AddSchemaFile(sf)
		}
	})
	return lenientCatalog{s.cat.base}
}

// ValidateRecord checks a record's JSON against the record lexicon of its
// collection. Datetimes and legacy blobs are accepted leniently, as
// network data requires.
func (s *Snapshot) ValidateRecord(collection string, raw json.RawMessage) error {
	l, ok := s.byID[collection]
	if !ok || l.Kind != KindRecord {
		return ErrNoRecordLexicon
	}
	data, err := atdata.UnmarshalJSON(raw)
	if err != nil {
		return fmt.Errorf("record is not valid atproto data: %w", err)
	}
	if _, typed := data["$type"]; !typed {
		data["$type"] = collection
	}
	if err := indigolex.ValidateRecord(s.catalog(), data, collection, indigolex.LenientMode); err != nil {
		return fmt.Errorf("record does not match lexicon %s: %w", collection, err)
	}
	return nil
}
