package appfolder

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/lexview/lexview/storage"
)

// Target is an instance a folder is applied to or exported from.
type Target interface {
	// Read returns the instance's definition.
	Read(ctx context.Context) (*Definition, error)
	// CheckScript compiles a Lua source as the instance would on an
	// upload and returns its error.
	CheckScript(ctx context.Context, source string) error
	// PutLexicon uploads l and returns the warnings of the upload (a
	// backfill job started, ...).
	PutLexicon(ctx context.Context, l Lexicon) (warnings []string, err error)
	// DeleteLexicon removes a lexicon (its records stay).
	DeleteLexicon(ctx context.Context, id string) error
	// PutScript creates or replaces the script of trigger.
	PutScript(ctx context.Context, trigger, source string) error
	// DeleteScript removes the script of trigger.
	DeleteScript(ctx context.Context, trigger string) error
	// DeclareIndex declares a field index; DropIndex drops one.
	DeclareIndex(ctx context.Context, spec storage.FieldIndexSpec) error
	DropIndex(ctx context.Context, spec storage.FieldIndexSpec) error
}

// Prepare loads the folder dir and compares it with t (Load, then
// Compare). Nothing is changed: a folder with any problem is an error.
func Prepare(ctx context.Context, dir string, t Target, prune bool) (*Definition, *Plan, error) {
	def, err := Load(dir)
	if err != nil {
		return nil, nil, err
	}
	p, err := Compare(ctx, t, def, prune)
	if err != nil {
		return nil, nil, err
	}
	return def, p, nil
}

// Compare compiles the scripts of def with t's check (Check), reads t's
// definition and returns the plan that applies def to t (Diff). Nothing
// is changed: a script that does not compile is an error.
func Compare(ctx context.Context, t Target, def *Definition, prune bool) (*Plan, error) {
	if err := Check(def, func(src string) error { return t.CheckScript(ctx, src) }); err != nil {
		return nil, err
	}
	have, err := t.Read(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the instance's definition: %w", err)
	}
	if err := checkIndexRoom(def, have); err != nil {
		return nil, err
	}
	return Diff(def, have, prune), nil
}

// checkIndexRoom refuses a folder whose indexes would not fit beside the
// instance's: Apply declares new indexes before it drops any, so each
// collection must have room for both, within storage.MaxFieldIndexes and
// storage.MaxTextIndexes.
func checkIndexRoom(want, have *Definition) error {
	all := map[string]map[string]storage.FieldIndexSpec{} // by collection, by indexKey
	for _, spec := range slices.Concat(have.Indexes, want.Indexes) {
		if all[spec.Collection] == nil {
			all[spec.Collection] = map[string]storage.FieldIndexSpec{}
		}
		all[spec.Collection][indexKey(spec)] = spec
	}
	var errs []error
	for _, collection := range sortedKeys(all) {
		texts := 0
		for _, spec := range all[collection] {
			if spec.Kind == storage.FieldIndexText {
				texts++
			}
		}
		if n := len(all[collection]); n > storage.MaxFieldIndexes || texts > storage.MaxTextIndexes {
			errs = append(errs, fileError(ManifestFile, 0, fmt.Errorf("collection %s would have %d field indexes (%d text) with those the instance has, "+
				"more than the %d (%d text) it may have: drop some first", collection, n, texts,
				storage.MaxFieldIndexes, storage.MaxTextIndexes)))
		}
	}
	return errors.Join(errs...)
}

// Apply runs the steps of p on t in order and returns the warnings of
// the uploads. It stops at the first step that fails; the steps before
// it stay applied, and applying the folder again finishes the rest.
func Apply(ctx context.Context, t Target, p *Plan) ([]string, error) {
	var warnings []string
	for _, s := range p.Lexicons {
		if s.Action == Remove {
			continue
		}
		w, err := t.PutLexicon(ctx, s.Lexicon)
		if err != nil {
			return warnings, fmt.Errorf("lexicon %s: %w", s.Lexicon.ID, err)
		}
		warnings = append(warnings, w...)
	}
	for _, s := range p.Scripts {
		if s.Action != Remove {
			if err := t.PutScript(ctx, s.Trigger, s.Source); err != nil {
				return warnings, fmt.Errorf("script %s: %w", s.Trigger, err)
			}
		}
	}
	for _, s := range p.Indexes {
		if s.Action == Add {
			if err := t.DeclareIndex(ctx, s.Spec); err != nil {
				return warnings, fmt.Errorf("index %s: %w", describeIndex(s.Spec), err)
			}
		}
	}
	for _, s := range p.Indexes {
		if s.Action == Remove {
			if err := t.DropIndex(ctx, s.Spec); err != nil {
				return warnings, fmt.Errorf("drop index %s: %w", describeIndex(s.Spec), err)
			}
		}
	}
	for _, s := range p.Scripts {
		if s.Action == Remove {
			if err := t.DeleteScript(ctx, s.Trigger); err != nil {
				return warnings, fmt.Errorf("remove script %s: %w", s.Trigger, err)
			}
		}
	}
	for _, s := range p.Lexicons {
		if s.Action == Remove {
			if err := t.DeleteLexicon(ctx, s.Lexicon.ID); err != nil {
				return warnings, fmt.Errorf("remove lexicon %s: %w", s.Lexicon.ID, err)
			}
		}
	}
	return warnings, nil
}
