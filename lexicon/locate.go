package lexicon

import (
	"encoding/json"
	"slices"
	"strings"

	indigolex "github.com/bluesky-social/indigo/atproto/lexicon"
)

// locate finds where in a document the Lexicon language error failure
// is: the dotted path from the document's root (such as
// "defs.main.record.properties.text") of the deepest definition that
// fails on its own, or "" when none does. Definitions are tried in the
// order of their names; among several that fail, one failing with
// failure's own message is preferred.
func locate(raw []byte, failure error) string {
	var doc struct {
		Defs map[string]json.RawMessage `json:"defs"`
	}
	if json.Unmarshal(raw, &doc) != nil {
		return ""
	}
	var found []schemaNode
	for _, name := range sortedKeys(doc.Defs) {
		n := schemaNode{path: "defs." + name, raw: doc.Defs[name]}
		if name == "" || strings.ContainsAny(name, "#.") {
			return n.path
		}
		var def indigolex.SchemaDef
		if err := json.Unmarshal(n.raw, &def); err != nil {
			n.err = err
		} else if def.IsPrimary() && name != "main" || !def.IsDefinable() {
			return n.path
		} else if n.err = def.CheckSchema(); n.err == nil {
			continue
		}
		found = append(found, n)
	}
	n, ok := pick(found, failure.Error())
	if !ok {
		return ""
	}
	return deepest(n, failure.Error())
}

// schemaNode is a schema inside a document: its path, its JSON, and the error
// it fails with on its own (nil when it passes).
type schemaNode struct {
	path string
	raw  json.RawMessage
	err  error
}

// check sets n.err: the error of n's schema checked on its own.
func (n *schemaNode) check() {
	var def indigolex.SchemaDef
	if n.err = json.Unmarshal(n.raw, &def); n.err == nil {
		n.err = def.CheckSchema()
	}
}

// pick returns the node failing with message msg, else the first one.
func pick(nodes []schemaNode, msg string) (schemaNode, bool) {
	if len(nodes) == 0 {
		return schemaNode{}, false
	}
	for _, n := range nodes {
		if sameError(msg, n.err) {
			return n, true
		}
	}
	return nodes[0], true
}

// sameError reports whether err is the error msg reports.
func sameError(msg string, err error) bool {
	return err != nil && strings.HasSuffix(msg, err.Error())
}

// deepest descends from failing node n into the schemas it holds: into
// one failing with msg itself, else, when n's own error is not msg, into
// the first that fails.
func deepest(n schemaNode, msg string) string {
	for depth := 0; depth < MaxDocumentDepth; depth++ {
		var failing []schemaNode
		for _, c := range children(n) {
			if c.check(); c.err != nil {
				failing = append(failing, c)
			}
		}
		next, ok := pick(failing, msg)
		if !ok || !sameError(msg, next.err) && sameError(msg, n.err) {
			break
		}
		n = next
	}
	return n.path
}

// children returns the schemas a schema holds: the properties of an
// object or params, the schemas of an input, output or message, and
// every member that is itself a schema (a record's record, an array's
// items, a query's parameters).
func children(n schemaNode) []schemaNode {
	var obj map[string]json.RawMessage
	if json.Unmarshal(n.raw, &obj) != nil {
		return nil
	}
	var out []schemaNode
	for _, key := range sortedKeys(obj) {
		v := obj[key]
		switch key {
		case "properties":
			var props map[string]json.RawMessage
			if json.Unmarshal(v, &props) == nil {
				for _, p := range sortedKeys(props) {
					if isObject(props[p]) {
						out = append(out, schemaNode{path: n.path + ".properties." + p, raw: props[p]})
					}
				}
			}
		case "input", "output", "message":
			var body struct {
				Schema json.RawMessage `json:"schema"`
			}
			if json.Unmarshal(v, &body) == nil && isObject(body.Schema) {
				out = append(out, schemaNode{path: n.path + "." + key + ".schema", raw: body.Schema})
			}
		default:
			var typed struct {
				Type *string `json:"type"`
			}
			if isObject(v) && json.Unmarshal(v, &typed) == nil && typed.Type != nil {
				out = append(out, schemaNode{path: n.path + "." + key, raw: v})
			}
		}
	}
	return out
}

func isObject(raw json.RawMessage) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c == '{'
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
