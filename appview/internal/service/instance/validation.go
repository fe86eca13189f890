package instance

import (
	"context"

	"github.com/lexview/lexview/storage"
)

// maxInvalidCounts bounds the (collection, reason) rows a validation
// report lists; the total counts them all.
const maxInvalidCounts = 200

// ValidationReport is what validation decided about the stored records
// (GET /admin/stats/validation): the modes, the records stored with a
// validation error per collection and reason, and the re-validation
// passes that follow lexicon revisions.
type ValidationReport struct {
	// Mode is the validation mode of the collections without their own.
	Mode string `json:"mode"`
	// Collections are the collections with a mode of their own.
	Collections map[string]string `json:"collections"`
	// TotalInvalid counts every flagged record.
	TotalInvalid int64 `json:"total_invalid"`
	// Invalid counts the flagged records per collection and reason, the
	// largest first (at most 200 rows).
	Invalid []storage.InvalidCount `json:"invalid"`
	// Passes are the re-validations, running or done, by collection.
	Passes []storage.ValidationPass `json:"passes"`
}

// Validation reports the validation modes, the flagged records and the
// re-validation passes.
func (s *Service) Validation(ctx context.Context) (ValidationReport, error) {
	out := ValidationReport{Mode: "reject", Collections: map[string]string{}}
	if s.opt.ValidationModes != nil {
		mode, per := s.opt.ValidationModes()
		out.Mode = mode
		for c, m := range per {
			out.Collections[c] = m
		}
	}
	counts, err := s.opt.Store.InvalidRecordCounts(ctx, 0)
	if err != nil {
		return ValidationReport{}, err
	}
	for _, c := range counts {
		out.TotalInvalid += c.Count
	}
	out.Invalid = counts[:min(len(counts), maxInvalidCounts)]
	if out.Passes, err = s.opt.Store.ValidationPasses(ctx); err != nil {
		return ValidationReport{}, err
	}
	return out, nil
}
