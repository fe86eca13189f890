package appfolder

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/service/fieldindexes"
	"github.com/lexview/lexview/appview/internal/service/scripts"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/script"
	"github.com/lexview/lexview/storage"
)

// The folder's names.
const (
	ManifestFile = "app.json"
	LexiconDir   = "lexicons"
	ScriptDir    = "scripts"
	// indexHookSuffix ends the file of a lexicon's index_hook.
	indexHookSuffix = ".index_hook"
	// anyLabelFile is the file name of the label.arrive:* script (an
	// underscore is no label value's).
	anyLabelFile = "_any"
)

// manifest is app.json.
type manifest struct {
	Lexicons  map[string]lexiconSettings `json:"lexicons,omitempty"`
	Indexes   []indexDeclaration         `json:"indexes,omitempty"`
	Variables []string                   `json:"variables,omitempty"`
}

// lexiconSettings are a lexicon's upload fields besides its document
// and scripts.
type lexiconSettings struct {
	TargetCollection string `json:"target_collection,omitempty"`
	Backfill         *bool  `json:"backfill,omitempty"`
}

// indexDeclaration is a declared field index in app.json.
type indexDeclaration struct {
	Collection string                 `json:"collection"`
	Path       string                 `json:"path"`
	Kind       storage.FieldIndexKind `json:"kind,omitempty"`
}

// Load reads the app folder dir and checks everything that needs no
// instance: each lexicon document (lexicon.Parse, as an upload), unique
// ids, target collections, that every script file belongs to a lexicon
// of the folder or names a valid trigger, the index declarations
// (as POST /admin/indexes checks them) and the variable names. Every
// problem found is in the error, by file. Lua sources are compiled by
// Check.
func Load(dir string) (*Definition, error) {
	return LoadFS(os.DirFS(dir))
}

// LoadFS is Load of the app folder at the root of fsys (an embedded
// folder: fs.Sub of an embed.FS).
func LoadFS(fsys fs.FS) (*Definition, error) {
	def := &Definition{Lexicons: map[string]Lexicon{}, Scripts: map[string]string{}}
	var errs []error
	errs = append(errs, loadLexicons(fsys, def)...)
	if m, err := readManifest(fsys); err != nil {
		errs = append(errs, err) // what it decoded so far is not checked
	} else {
		errs = append(errs, applyManifest(m, def)...)
	}
	errs = append(errs, loadScripts(fsys, def)...)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return def, nil
}

// readManifest reads app.json; a folder without one has none.
func readManifest(fsys fs.FS) (manifest, error) {
	var m manifest
	raw, err := fs.ReadFile(fsys, ManifestFile)
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		line := jsonLine(raw)
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			line = lineAt(raw, te.Offset)
		}
		return m, fileError(ManifestFile, line, err)
	}
	return m, nil
}

// walkLexiconFiles calls fn with the name and contents of every
// lexicons/**/*.json of fsys (none when the folder has no lexicons/).
func walkLexiconFiles(fsys fs.FS, fn func(name string, raw []byte) error) error {
	return fs.WalkDir(fsys, LexiconDir, func(name string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && name == LexiconDir {
			return fs.SkipDir
		}
		if err != nil || d.IsDir() || path.Ext(name) != ".json" {
			return err
		}
		raw, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		return fn(name, raw)
	})
}

// loadLexicons reads every lexicons/**/*.json into def.
func loadLexicons(fsys fs.FS, def *Definition) []error {
	var errs []error
	err := walkLexiconFiles(fsys, func(name string, raw []byte) error {
		doc, err := lexicon.Parse(raw)
		if err != nil {
			errs = append(errs, fileError(name, jsonLine(raw), err))
			return nil
		}
		id := doc.ID.String()
		if prev, dup := def.Lexicons[id]; dup {
			errs = append(errs, fileError(name, 0, fmt.Errorf("lexicon %s is also in %s", id, prev.File)))
			return nil
		}
		def.Lexicons[id] = Lexicon{ID: id, Kind: doc.Kind, Document: json.RawMessage(raw), File: name}
		return nil
	})
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", LexiconDir, err))
	}
	return errs
}

// applyManifest checks app.json against the lexicons of def and adds its
// settings, indexes and variables to def.
func applyManifest(m manifest, def *Definition) []error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fileError(ManifestFile, 0, fmt.Errorf(format, a...)))
	}
	for _, id := range sortedKeys(m.Lexicons) {
		s := m.Lexicons[id]
		l, ok := def.Lexicons[id]
		switch {
		case !ok:
			bad("lexicons.%s: no such lexicon in %s/", id, LexiconDir)
			continue
		case s.TargetCollection != "" && l.Kind == lexicon.KindRecord:
			bad("lexicons.%s: target_collection is for queries and procedures (a record lexicon's collection is its id)", id)
		case s.TargetCollection != "":
			if _, err := syntax.ParseNSID(s.TargetCollection); err != nil {
				bad("lexicons.%s: invalid target_collection %q", id, s.TargetCollection)
			}
		}
		if s.Backfill != nil && l.Kind != lexicon.KindRecord {
			bad("lexicons.%s: backfill is for record lexicons", id)
		}
		l.TargetCollection, l.Backfill = s.TargetCollection, s.Backfill
		def.Lexicons[id] = l
	}
	seen := map[string]bool{}
	for i, d := range m.Indexes {
		spec, err := fieldindexes.Validate(storage.FieldIndexSpec{Collection: d.Collection, Path: d.Path, Kind: d.Kind})
		if err != nil {
			bad("indexes[%d]: %w", i, err)
			continue
		}
		if seen[indexKey(spec)] {
			bad("indexes[%d]: declared twice", i)
			continue
		}
		seen[indexKey(spec)] = true
		def.Indexes = append(def.Indexes, spec)
	}
	sortIndexes(def.Indexes)
	for _, v := range m.Variables {
		if !scripts.ValidKey(v) {
			bad("variables: %q is not a variable name", v)
		}
	}
	def.Variables = slices.Compact(slices.Sorted(slices.Values(m.Variables)))
	return errs
}

// loadScripts reads scripts/ into def: the lexicon fields from the files
// at its top, the trigger-keyed scripts from its kind folders.
func loadScripts(fsys fs.FS, def *Definition) []error {
	var errs []error
	err := fs.WalkDir(fsys, ScriptDir, func(name string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && name == ScriptDir {
			return fs.SkipDir
		}
		if err != nil || d.IsDir() || path.Ext(name) != ".lua" {
			return err
		}
		src, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		if err := addScript(def, name, string(src)); err != nil {
			errs = append(errs, fileError(name, 0, err))
		}
		return nil
	})
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", ScriptDir, err))
	}
	return errs
}

// addScript adds the script file name (a path in the folder) to def.
func addScript(def *Definition, name, src string) error {
	rel := strings.TrimPrefix(name, ScriptDir+"/")
	base := strings.TrimSuffix(path.Base(rel), ".lua")
	switch dir := path.Dir(rel); {
	case dir == ".":
		id, hook := strings.CutSuffix(base, indexHookSuffix)
		l, ok := def.Lexicons[id]
		if !ok {
			return fmt.Errorf("no lexicon %s in %s/ (a trigger's script goes in %s/<kind>/, such as %s/record.create/%s.lua)",
				id, LexiconDir, ScriptDir, ScriptDir, id)
		}
		if hook {
			l.IndexHook = src
		} else {
			l.Script = src
		}
		def.Lexicons[id] = l
	case !strings.Contains(dir, "/") && slices.Contains(script.Kinds(), dir):
		if dir == script.KindLabel && base == anyLabelFile {
			base = script.AnyLabel
		}
		trigger := dir + ":" + base
		if err := scripts.ValidateTrigger(trigger); err != nil {
			return err
		}
		def.Scripts[trigger] = src
	default:
		return fmt.Errorf("a script is %s/<nsid>.lua, %s/<nsid>%s.lua or %s/<kind>/<name>.lua, with kind one of %s",
			ScriptDir, ScriptDir, indexHookSuffix, ScriptDir, strings.Join(script.Kinds(), ", "))
	}
	return nil
}

// triggerFile is the file, in the folder, of the script of trigger.
func triggerFile(trigger string) string {
	kind, name, _ := strings.Cut(trigger, ":")
	if kind == script.KindLabel && name == script.AnyLabel {
		name = anyLabelFile
	}
	return path.Join(ScriptDir, kind, name+".lua")
}

// Check compiles every Lua source of def with check (the instance's
// syntax check, appview.Scripts.Check) and returns every failure, by
// file.
func Check(def *Definition, check func(source string) error) error {
	var errs []error
	try := func(file, src string) {
		if err := check(src); err != nil {
			errs = append(errs, fileError(file, luaLine(err), err))
		}
	}
	for _, id := range sortedKeys(def.Lexicons) {
		l := def.Lexicons[id]
		if l.Script != "" {
			try(path.Join(ScriptDir, id+".lua"), l.Script)
		}
		if l.IndexHook != "" {
			try(path.Join(ScriptDir, id+indexHookSuffix+".lua"), l.IndexHook)
		}
	}
	for _, trigger := range sortedKeys(def.Scripts) {
		try(triggerFile(trigger), def.Scripts[trigger])
	}
	return errors.Join(errs...)
}
