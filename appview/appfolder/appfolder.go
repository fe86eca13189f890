// Package appfolder is an app's definition as a folder of files: its
// lexicons, their scripts, its trigger-keyed scripts, its declared field
// indexes and the names of its script variables (docs/apps.md). It loads
// and validates a folder, reads an instance's definition through a
// Target, compares the two into a Plan, applies a plan, and writes a
// definition back as a folder. `appview apply` and `appview export` are
// this package.
//
// The layout:
//
//	app.json                       lexicon settings, indexes, variable names (optional)
//	lexicons/**/*.json             one lexicon document per file
//	scripts/<nsid>.lua             the `script` of the query or procedure lexicon <nsid>
//	scripts/<nsid>.index_hook.lua  the `index_hook` of the lexicon <nsid>
//	scripts/<kind>/<name>.lua      the script of trigger <kind>:<name> (record.create/com.example.post.lua)
package appfolder

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"

	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
)

// Definition is an app's definition: what a folder holds and what apply
// makes an instance hold.
type Definition struct {
	// Lexicons by NSID.
	Lexicons map[string]Lexicon
	// Scripts are the trigger-keyed scripts' sources, by trigger
	// ("record.create:com.example.post").
	Scripts map[string]string
	// Indexes are the declared field indexes, normalised (an empty kind
	// is value) and sorted by collection, path and kind.
	Indexes []storage.FieldIndexSpec
	// Variables are the names of the script variables scripts read
	// (their values are never part of a definition), sorted.
	Variables []string
}

// Lexicon is one lexicon with the fields an upload sets besides its
// document (POST /admin/lexicons).
type Lexicon struct {
	ID       string
	Kind     lexicon.Kind
	Document json.RawMessage
	// TargetCollection is the collection of a query or procedure ("" for
	// none); a record lexicon's is its own id and is not kept here.
	TargetCollection string
	// Backfill is the stored backfill flag of a record lexicon; nil in a
	// folder that does not say (the instance's default on a create, the
	// instance's value kept on a change). Nil for other kinds.
	Backfill *bool
	// Script is the lexicon's `script`, IndexHook its `index_hook`.
	Script, IndexHook string
	// Revision is the instance's revision; 0 in a folder.
	Revision int
	// File is where a folder's lexicon was read, relative to the folder;
	// "" for an instance's.
	File string
}

// sameDocument reports whether two lexicon documents are the same JSON
// value (key order and spacing aside).
func sameDocument(a, b json.RawMessage) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return string(a) == string(b)
	}
	return reflect.DeepEqual(va, vb)
}

// differences names the fields of have that want changes: "document",
// "target_collection", "backfill", "script", "index_hook". Nil when want
// is what have holds.
func differences(want, have Lexicon) []string {
	var out []string
	if !sameDocument(want.Document, have.Document) {
		out = append(out, "document")
	}
	if want.Kind != lexicon.KindRecord && want.TargetCollection != have.TargetCollection {
		out = append(out, "target_collection")
	}
	if want.Kind == lexicon.KindRecord && want.Backfill != nil && (have.Backfill == nil || *want.Backfill != *have.Backfill) {
		out = append(out, "backfill")
	}
	if want.Script != have.Script {
		out = append(out, "script")
	}
	if want.IndexHook != have.IndexHook {
		out = append(out, "index_hook")
	}
	return out
}

// sortIndexes sorts specs by collection, path and kind.
func sortIndexes(specs []storage.FieldIndexSpec) {
	slices.SortFunc(specs, func(a, b storage.FieldIndexSpec) int {
		return strings.Compare(indexKey(a), indexKey(b))
	})
}

// indexKey identifies an index declaration.
func indexKey(s storage.FieldIndexSpec) string {
	return s.Collection + "\x00" + s.Path + "\x00" + string(s.Kind)
}

// sortedKeys returns the keys of m, sorted.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
