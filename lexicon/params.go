package lexicon

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	indigolex "github.com/bluesky-social/indigo/atproto/lexicon"
	"github.com/bluesky-social/indigo/atproto/syntax"
)

// Params checks the query-string parameters of a call against the
// `parameters` (type "params") of a query or procedure lexicon, as an
// atproto XRPC server does before a method runs. It is compiled once, when
// the lexicon is stored or loaded (Lexicon.Params), so a call pays only
// for the checks themselves.
//
// A declared parameter must be present when it is required and, when
// present, must parse as its type (boolean: `true` or `false`; integer:
// a base-10 integer) and meet its constraints. A scalar parameter's first
// value is checked (the one scripts and the default query read); an array
// parameter is the parameter repeated, each value checked as an item.
// Parameters the lexicon does not declare pass unchecked. knownValues
// name suggestions, not a closed set, and are not enforced.
type Params struct {
	props []paramProp // in name order, so errors come in a stable order
}

// paramProp is one declared parameter.
type paramProp struct {
	name     string
	required bool
	array    bool
	// minItems and maxItems bound an array's values; -1 when unbounded.
	minItems, maxItems int
	item               paramItem
}

// paramItem checks one value of a parameter.
type paramItem struct {
	typ     string // "boolean", "integer", "string" or "unknown"
	boolean indigolex.SchemaBoolean
	integer indigolex.SchemaInteger
	str     indigolex.SchemaString
	// format is the string format's check; nil when none is declared.
	format func(string) bool
}

// ParamError says why a call's parameters were refused; its message names
// the parameter and is meant for the caller.
type ParamError struct {
	// Name is the parameter.
	Name string
	// Reason is what is wrong with it ("is required", "must be an
	// integer", ...).
	Reason string
}

func (e *ParamError) Error() string {
	if e.Reason == reasonRequired {
		return "missing required parameter " + e.Name
	}
	return "invalid parameter " + e.Name + ": " + e.Reason
}

const reasonRequired = "is required"

// paramFormat is the check of a string format for parameters: the fast
// check of the validation path (compile.go), then indigo's exact one. A
// datetime is checked strictly (RFC 3339 with a time zone, as the Lexicon
// specification asks of clients), unlike records from the network, which
// are read leniently; the fast datetime check accepts only strict ones.
func paramFormat(name string) func(string) bool {
	f, ok := formats[name]
	if !ok {
		return nil
	}
	exact := f.slow
	if name == "datetime" {
		exact = func(s string) error { _, err := syntax.ParseDatetime(s); return err }
	}
	return func(s string) bool { return (f.fast != nil && f.fast(s)) || exact(s) == nil }
}

// compileParams compiles the parameters of a query or procedure document;
// nil when it declares none (or the document does not read, which Parse
// has refused before).
func compileParams(raw json.RawMessage) *Params {
	var doc struct {
		Defs struct {
			Main struct {
				Parameters *indigolex.SchemaDef `json:"parameters"`
			} `json:"main"`
		} `json:"defs"`
	}
	if json.Unmarshal(raw, &doc) != nil || doc.Defs.Main.Parameters == nil {
		return nil
	}
	ps, ok := doc.Defs.Main.Parameters.Inner.(indigolex.SchemaParams)
	if !ok || len(ps.Properties) == 0 {
		return nil
	}
	return newParams(ps)
}

// newParams compiles a params schema. Property types the Lexicon language
// does not allow in params were refused at upload; here they check
// nothing.
func newParams(ps indigolex.SchemaParams) *Params {
	p := &Params{props: make([]paramProp, 0, len(ps.Properties))}
	for name, def := range ps.Properties {
		prop := paramProp{name: name, required: slices.Contains(ps.Required, name), minItems: -1, maxItems: -1}
		inner := def.Inner
		if arr, ok := inner.(indigolex.SchemaArray); ok {
			prop.array, inner = true, arr.Items.Inner
			if arr.MinLength != nil {
				prop.minItems = *arr.MinLength
			}
			if arr.MaxLength != nil {
				prop.maxItems = *arr.MaxLength
			}
		}
		prop.item = newParamItem(inner)
		p.props = append(p.props, prop)
	}
	slices.SortFunc(p.props, func(a, b paramProp) int { return strings.Compare(a.name, b.name) })
	return p
}

func newParamItem(def any) paramItem {
	switch v := def.(type) {
	case indigolex.SchemaBoolean:
		return paramItem{typ: "boolean", boolean: v}
	case indigolex.SchemaInteger:
		return paramItem{typ: "integer", integer: v}
	case indigolex.SchemaString:
		it := paramItem{typ: "string", str: v}
		if v.Format != nil {
			it.format = paramFormat(*v.Format)
		}
		return it
	}
	return paramItem{typ: "unknown"}
}

// Validate checks q against the declared parameters. Parameters named in
// except are left unchecked (the default query's own parameters, whose
// answers the interface fixes). A refusal is a *ParamError.
func (p *Params) Validate(q url.Values, except ...string) error {
	if p == nil {
		return nil
	}
	for i := range p.props {
		prop := &p.props[i]
		if len(except) > 0 && slices.Contains(except, prop.name) {
			continue
		}
		if err := prop.check(q[prop.name]); err != nil {
			return err
		}
	}
	return nil
}

// check checks the values a call gave the parameter.
func (prop *paramProp) check(vs []string) error {
	if len(vs) == 0 {
		if prop.required {
			return &ParamError{Name: prop.name, Reason: reasonRequired}
		}
		return nil
	}
	if !prop.array {
		return prop.fail(prop.item.check(vs[0]))
	}
	if prop.minItems >= 0 && len(vs) < prop.minItems {
		return prop.fail(fmt.Sprintf("must be given at least %d times", prop.minItems))
	}
	if prop.maxItems >= 0 && len(vs) > prop.maxItems {
		return prop.fail(fmt.Sprintf("must be given at most %d times", prop.maxItems))
	}
	for _, v := range vs {
		if reason := prop.item.check(v); reason != "" {
			return prop.fail(reason)
		}
	}
	return nil
}

func (prop *paramProp) fail(reason string) error {
	if reason == "" {
		return nil
	}
	return &ParamError{Name: prop.name, Reason: reason}
}

// check returns what is wrong with one value, "" when nothing is.
func (it *paramItem) check(v string) string {
	switch it.typ {
	case "boolean":
		return it.checkBoolean(v)
	case "integer":
		return it.checkInteger(v)
	case "string":
		return it.checkString(v)
	}
	return ""
}

func (it *paramItem) checkBoolean(v string) string {
	var b bool
	switch v {
	case "true":
		b = true
	case "false":
	default:
		return "must be true or false"
	}
	if c := it.boolean.Const; c != nil && b != *c {
		return "must be " + strconv.FormatBool(*c)
	}
	return ""
}

func (it *paramItem) checkInteger(v string) string {
	n, err := strconv.Atoi(v)
	if err != nil || v[0] == '+' {
		return "must be an integer"
	}
	s := &it.integer
	switch {
	case s.Const != nil && n != *s.Const:
		return "must be " + strconv.Itoa(*s.Const)
	case s.Minimum != nil && n < *s.Minimum:
		return "must be at least " + strconv.Itoa(*s.Minimum)
	case s.Maximum != nil && n > *s.Maximum:
		return "must be at most " + strconv.Itoa(*s.Maximum)
	case len(s.Enum) > 0 && !slices.Contains(s.Enum, n):
		return "must be one of " + joinInts(s.Enum)
	}
	return ""
}

func (it *paramItem) checkString(v string) string {
	s := &it.str
	switch {
	case s.Const != nil && v != *s.Const:
		return fmt.Sprintf("must be %q", *s.Const)
	case len(s.Enum) > 0 && !slices.Contains(s.Enum, v):
		return "must be one of " + joinQuoted(s.Enum)
	case s.MinLength != nil && len(v) < *s.MinLength:
		return fmt.Sprintf("must be at least %d bytes long", *s.MinLength)
	case s.MaxLength != nil && len(v) > *s.MaxLength:
		return fmt.Sprintf("must be at most %d bytes long", *s.MaxLength)
	}
	if s.MinGraphemes != nil || s.MaxGraphemes != nil {
		n := graphemes(v)
		if s.MinGraphemes != nil && n < *s.MinGraphemes {
			return fmt.Sprintf("must be at least %d characters long", *s.MinGraphemes)
		}
		if s.MaxGraphemes != nil && n > *s.MaxGraphemes {
			return fmt.Sprintf("must be at most %d characters long", *s.MaxGraphemes)
		}
	}
	if it.format != nil && !it.format(v) {
		return "must be a valid " + *s.Format
	}
	return ""
}

func joinInts(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ", ")
}

func joinQuoted(ss []string) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = strconv.Quote(s)
	}
	return strings.Join(parts, ", ")
}
