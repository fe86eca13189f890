package lexicon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	indigolex "github.com/bluesky-social/indigo/atproto/lexicon"
)

// locate finds where in a document the Lexicon language error failure
// is: the dotted path from the document's root (such as
// "defs.main.record.properties.text") of a schema that fails its own
// check, with the schemas it holds replaced by valid placeholders, or ""
// when none does. Schemas are visited depth first, in the order of
// their names, the schemas a schema holds before it; among those that
// fail, the first failing with failure's own message is preferred, else
// the first. The document is decoded once and each schema checked
// without its subtree, so the work grows with the document's size.
func locate(raw []byte, failure error) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc struct {
		Defs map[string]any `json:"defs"`
	}
	if dec.Decode(&doc) != nil {
		return ""
	}
	msg := failure.Error()
	var found []fault
	for _, name := range sortedKeys(doc.Defs) {
		path := "defs." + name
		if name == "" || strings.ContainsAny(name, "#.") {
			return path
		}
		def, ok := doc.Defs[name].(map[string]any)
		if !ok {
			return path
		}
		walk(path, def, 0, &found, func(d *indigolex.SchemaDef) error {
			if d.IsPrimary() && name != "main" || !d.IsDefinable() {
				return errors.New("not allowed as this definition")
			}
			return nil
		})
	}
	if len(found) == 0 {
		return ""
	}
	for _, f := range found {
		if strings.HasSuffix(msg, f.err.Error()) {
			return f.path
		}
	}
	return found[0].path
}

// fault is a schema that fails its own check.
type fault struct {
	path string
	err  error
}

// walk checks schema s at path and the schemas it holds, those first,
// appending the ones that fail to found; extra adds a check of s.
func walk(path string, s map[string]any, depth int, found *[]fault, extra func(*indigolex.SchemaDef) error) {
	shallow := make(map[string]any, len(s))
	for _, key := range sortedKeys(s) {
		v := s[key]
		switch key {
		case "properties":
			props, ok := v.(map[string]any)
			if !ok {
				break
			}
			stand := make(map[string]any, len(props))
			for _, p := range sortedKeys(props) {
				stand[p] = visit(path+".properties."+p, props[p], depth, found)
			}
			v = stand
		case "input", "output", "message":
			body, ok := v.(map[string]any)
			if !ok || body["schema"] == nil {
				break
			}
			stand := make(map[string]any, len(body))
			for k, bv := range body {
				stand[k] = bv
			}
			stand["schema"] = visit(path+"."+key+".schema", body["schema"], depth, found)
			v = stand
		default:
			v = visit(path+"."+key, v, depth, found)
		}
		shallow[key] = v
	}
	if err := checkOne(shallow, extra); err != nil {
		*found = append(*found, fault{path: path, err: err})
	}
}

// visit walks v when it is a schema (an object with a type) and returns
// what stands for it in its holder's check: the placeholder of its type,
// or v itself.
func visit(path string, v any, depth int, found *[]fault) any {
	s, ok := v.(map[string]any)
	if !ok {
		return v
	}
	typ, ok := s["type"].(string)
	if !ok {
		return v
	}
	if depth < MaxDocumentDepth {
		walk(path, s, depth+1, found, nil)
	}
	if p, ok := placeholders[typ]; ok {
		return p
	}
	return v
}

// checkOne checks one schema as the Lexicon language rules do.
func checkOne(s map[string]any, extra func(*indigolex.SchemaDef) error) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	var def indigolex.SchemaDef
	if err := json.Unmarshal(b, &def); err != nil {
		return err
	}
	if err := def.CheckSchema(); err != nil {
		return err
	}
	if extra != nil {
		return extra(&def)
	}
	return nil
}

// placeholders are valid schemas of each type, standing in for a schema
// checked on its own. A schema of another type stands for itself.
var placeholders = map[string]json.RawMessage{
	"boolean": json.RawMessage(`{"type":"boolean"}`), "integer": json.RawMessage(`{"type":"integer"}`),
	"string": json.RawMessage(`{"type":"string"}`), "bytes": json.RawMessage(`{"type":"bytes"}`),
	"cid-link": json.RawMessage(`{"type":"cid-link"}`), "blob": json.RawMessage(`{"type":"blob"}`),
	"unknown": json.RawMessage(`{"type":"unknown"}`),
	"array":   json.RawMessage(`{"type":"array","items":{"type":"string"}}`),
	"object":  json.RawMessage(`{"type":"object","properties":{}}`),
	"params":  json.RawMessage(`{"type":"params","properties":{}}`),
	"ref":     json.RawMessage(`{"type":"ref","ref":"#placeholder"}`),
	"union":   json.RawMessage(`{"type":"union","refs":[]}`),
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
