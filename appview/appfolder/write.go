package appfolder

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/lexview/lexview/lexicon"
)

// Write writes def to the app folder dir, creating it when absent, so
// that Load(dir) reads def back. A lexicon goes to the file of that id
// the folder already has, else to lexicons/<nsid with / for .>.json
// (lexicons/com/example/post.json). Lexicon documents and script
// files of the folder that def does not hold are removed, and app.json
// is rewritten (removed when def needs none); other files are left
// alone.
func Write(dir string, def *Definition) error {
	existing, err := existingLexiconFiles(dir)
	if err != nil {
		return err
	}
	written := map[string]bool{}
	put := func(name string, data []byte) error {
		written[name] = true
		file := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return err
		}
		return os.WriteFile(file, data, 0o644)
	}
	m := manifest{Lexicons: map[string]lexiconSettings{}, Variables: def.Variables}
	for _, id := range sortedKeys(def.Lexicons) {
		l := def.Lexicons[id]
		name, ok := existing[id]
		if !ok {
			name = path.Join(LexiconDir, strings.ReplaceAll(id, ".", "/")+".json")
		}
		if err := put(name, indentJSON(l.Document)); err != nil {
			return err
		}
		if l.Script != "" {
			if err := put(path.Join(ScriptDir, id+".lua"), []byte(l.Script)); err != nil {
				return err
			}
		}
		if l.IndexHook != "" {
			if err := put(path.Join(ScriptDir, id+indexHookSuffix+".lua"), []byte(l.IndexHook)); err != nil {
				return err
			}
		}
		s := lexiconSettings{Backfill: l.Backfill}
		if l.Kind != lexicon.KindRecord {
			s.TargetCollection = l.TargetCollection
		}
		if s != (lexiconSettings{}) {
			m.Lexicons[id] = s
		}
	}
	for _, trigger := range sortedKeys(def.Scripts) {
		if err := put(triggerFile(trigger), []byte(def.Scripts[trigger])); err != nil {
			return err
		}
	}
	for _, spec := range def.Indexes {
		m.Indexes = append(m.Indexes, indexDeclaration{Collection: spec.Collection, Path: spec.Path, Kind: spec.Kind})
	}
	if err := writeManifest(dir, m); err != nil {
		return err
	}
	return removeStale(dir, written)
}

// existingLexiconFiles maps the lexicon id of each document under
// dir/lexicons to its file; files that are no lexicon are left out.
func existingLexiconFiles(dir string) (map[string]string, error) {
	out := map[string]string{}
	err := walkLexiconFiles(os.DirFS(dir), func(name string, raw []byte) error {
		if doc, err := lexicon.Parse(raw); err == nil {
			out[doc.ID.String()] = name
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) { // no dir yet
		return out, nil
	}
	return out, err
}

// writeManifest writes app.json, or removes it when m says nothing.
func writeManifest(dir string, m manifest) error {
	file := filepath.Join(dir, ManifestFile)
	if len(m.Lexicons) == 0 && len(m.Indexes) == 0 && len(m.Variables) == 0 {
		if err := os.Remove(file); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(file, append(raw, '\n'), 0o644)
}

// removeStale removes the lexicon documents and scripts under dir that
// were not written.
func removeStale(dir string, written map[string]bool) error {
	fsys := os.DirFS(dir)
	for _, sub := range []struct{ dir, ext string }{{LexiconDir, ".json"}, {ScriptDir, ".lua"}} {
		err := fs.WalkDir(fsys, sub.dir, func(name string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) && name == sub.dir {
				return fs.SkipDir
			}
			if err != nil || d.IsDir() || path.Ext(name) != sub.ext || written[name] {
				return err
			}
			if err := os.Remove(filepath.Join(dir, filepath.FromSlash(name))); err != nil {
				return fmt.Errorf("remove %s: %w", name, err)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// indentJSON is a lexicon document as written: indented by two spaces,
// with a final newline (the document as it is if it is no JSON).
func indentJSON(raw json.RawMessage) []byte {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return raw
	}
	buf.WriteByte('\n')
	return buf.Bytes()
}
