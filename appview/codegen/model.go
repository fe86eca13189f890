package codegen

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"

	indigolex "github.com/bluesky-social/indigo/atproto/lexicon"
)

// kind is the kind of a schema node of the model.
type kind int

const (
	kUnknown kind = iota // `unknown`, and references that resolve to nothing
	kString
	kInteger
	kBoolean
	kBytes
	kCIDLink
	kBlob
	kArray
	kObject
	kRef
	kUnion
)

// typ is a field's type, language-neutral.
type typ struct {
	kind kind
	desc string

	// strings
	format      string
	knownValues []string
	enum        []string // string enum or const; integers' are not typed
	// array
	items *typ
	// object
	obj *object
	// ref: the full reference, "nsid#name"
	ref string
	// union: full references, sorted; closed unions allow nothing else
	refs   []string
	closed bool
}

// object is an object schema: its properties sorted by name.
type object struct {
	props []prop
}

// prop is one property of an object or of params.
type prop struct {
	name     string
	t        *typ
	required bool
	nullable bool
}

// defKind is what a named definition is.
type defKind int

const (
	dObject defKind = iota // an object def, or a record's record
	dRecord
	dToken
	dOther // a string, integer, array... def: an alias of its type
	dMethod
)

// def is one named definition of a lexicon, a record's main included.
type def struct {
	ref  string // "nsid#name"
	nsid string
	name string
	kind defKind
	desc string
	t    *typ // dObject, dRecord (an object), dOther
}

// body is a method's input or output.
type body struct {
	encoding string
	schema   *typ // nil: no schema (a JSON body of unknown shape, or binary)
	desc     string
}

// json reports whether the body is JSON.
func (b *body) json() bool { return b.encoding == "application/json" }

// served says that a method answers with Lexview's default query shapes:
// records of a collection with `uri` and `cid` added (docs/xrpc.md).
type served struct {
	collection string
	record     string // the record's main def ("nsid#main"), "" when the app has no lexicon of it
	getOnly    bool   // the params require `uri`: only the one-record answer
}

// method is a query or a procedure.
type method struct {
	nsid      string
	procedure bool
	desc      string
	params    *object // nil: no parameters
	input     *body
	output    *body
	errors    []methodError
	served    *served
	// writes is set for a procedure Lexview answers itself (no script,
	// a target collection, no declared output): it writes the body to
	// the caller's PDS and answers the PDS's answer.
	writes bool
	// writesRecord is the record main def of a writes procedure's target
	// collection ("" when the app has no lexicon of it).
	writesRecord string
}

// methodError is an error a method declares.
type methodError struct{ name, desc string }

// model is what the generators write: every definition and method of a
// set of lexicons, references resolved.
type model struct {
	defs    map[string]*def // by full reference
	methods []*method       // sorted by NSID
	// unresolved are references to definitions the set does not hold,
	// sorted; they are typed as unknown.
	unresolved []string
}

// sortedDefs returns the defs sorted by reference.
func (m *model) sortedDefs() []*def {
	out := make([]*def, 0, len(m.defs))
	for _, d := range m.defs {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b *def) int { return strings.Compare(a.ref, b.ref) })
	return out
}

// resolve returns the def a reference names, nil when unresolved.
func (m *model) resolve(ref string) *def { return m.defs[ref] }

// Lexicon is one lexicon the generator reads: its document and how the
// instance serves it.
type Lexicon struct {
	// Document is the lexicon's JSON.
	Document json.RawMessage
	// TargetCollection is a query's target collection ("" for none).
	TargetCollection string
	// Scripted is set when a script answers the method: then only its
	// declared output says what it answers.
	Scripted bool
}

// build parses the lexicons into a model.
func build(lexicons []Lexicon) (*model, error) {
	m := &model{defs: map[string]*def{}}
	type pending struct {
		nsid string
		sd   indigolex.SchemaDef
		lex  Lexicon
	}
	var methods []pending
	for _, l := range lexicons {
		var f indigolex.SchemaFile
		if err := json.Unmarshal(l.Document, &f); err != nil {
			return nil, fmt.Errorf("lexicon: %w", err)
		}
		if f.ID == "" {
			return nil, fmt.Errorf("lexicon without an id")
		}
		for _, name := range sortedKeys(f.Defs) {
			sd := f.Defs[name]
			ref := f.ID + "#" + name
			d := &def{ref: ref, nsid: f.ID, name: name}
			c := converter{nsid: f.ID}
			switch v := sd.Inner.(type) {
			case indigolex.SchemaRecord:
				d.kind, d.desc, d.t = dRecord, str(v.Description), c.object(&v.Record)
			case indigolex.SchemaObject:
				d.kind, d.desc, d.t = dObject, str(v.Description), c.object(&v)
			case indigolex.SchemaToken:
				d.kind, d.desc = dToken, str(v.Description)
			case indigolex.SchemaQuery, indigolex.SchemaProcedure:
				d.kind = dMethod
				if name == "main" {
					methods = append(methods, pending{nsid: f.ID, sd: sd, lex: l})
				}
			case indigolex.SchemaSubscription, indigolex.SchemaPermissionSet:
				continue // not served over XRPC by Lexview
			default:
				d.kind, d.t = dOther, c.field(&sd)
				d.desc = d.t.desc
			}
			m.defs[ref] = d
		}
	}
	for _, p := range methods {
		mt := &method{nsid: p.nsid}
		c := converter{nsid: p.nsid}
		switch v := p.sd.Inner.(type) {
		case indigolex.SchemaQuery:
			mt.desc = str(v.Description)
			mt.params = c.params(v.Parameters)
			mt.output = c.body(v.Output)
			mt.errors = methodErrors(v.Errors)
			if mt.output == nil && !p.lex.Scripted && p.lex.TargetCollection != "" {
				mt.served = &served{collection: p.lex.TargetCollection, getOnly: requires(mt.params, "uri")}
				if d := m.defs[p.lex.TargetCollection+"#main"]; d != nil && d.kind == dRecord {
					mt.served.record = d.ref
				}
			}
		case indigolex.SchemaProcedure:
			mt.procedure = true
			mt.desc = str(v.Description)
			mt.params = c.params(v.Parameters)
			mt.input = c.body(v.Input)
			mt.output = c.body(v.Output)
			mt.errors = methodErrors(v.Errors)
			mt.writes = mt.output == nil && !p.lex.Scripted && p.lex.TargetCollection != ""
			if d := m.defs[p.lex.TargetCollection+"#main"]; mt.writes && d != nil && d.kind == dRecord {
				mt.writesRecord = d.ref
			}
		}
		m.methods = append(m.methods, mt)
	}
	slices.SortFunc(m.methods, func(a, b *method) int { return strings.Compare(a.nsid, b.nsid) })
	m.unresolved = m.findUnresolved()
	return m, nil
}

// findUnresolved lists the references no def answers, sorted.
func (m *model) findUnresolved() []string {
	seen := map[string]bool{}
	var walk func(t *typ)
	walk = func(t *typ) {
		if t == nil {
			return
		}
		switch t.kind {
		case kRef:
			if d := m.resolve(t.ref); d == nil || d.kind == dMethod {
				seen[t.ref] = true
			}
		case kUnion:
			for _, r := range t.refs {
				if d := m.resolve(r); d == nil || d.kind == dMethod {
					seen[r] = true
				}
			}
		case kArray:
			walk(t.items)
		case kObject:
			for _, p := range t.obj.props {
				walk(p.t)
			}
		}
	}
	for _, d := range m.defs {
		walk(d.t)
	}
	for _, mt := range m.methods {
		if mt.params != nil {
			walk(&typ{kind: kObject, obj: mt.params})
		}
		for _, b := range []*body{mt.input, mt.output} {
			if b != nil {
				walk(b.schema)
			}
		}
	}
	return sortedKeys(seen)
}

// converter turns indigo's schema values into the model's, resolving
// local references against its lexicon's NSID.
type converter struct{ nsid string }

func (c converter) fullRef(ref string) string {
	switch {
	case strings.HasPrefix(ref, "#"):
		return c.nsid + ref
	case !strings.Contains(ref, "#"):
		return ref + "#main"
	}
	return ref
}

func (c converter) object(o *indigolex.SchemaObject) *typ {
	obj := &object{}
	for _, name := range sortedKeys(o.Properties) {
		sd := o.Properties[name]
		obj.props = append(obj.props, prop{name: name, t: c.field(&sd),
			required: slices.Contains(o.Required, name), nullable: slices.Contains(o.Nullable, name)})
	}
	return &typ{kind: kObject, obj: obj, desc: str(o.Description)}
}

func (c converter) params(p *indigolex.SchemaParams) *object {
	if p == nil || len(p.Properties) == 0 {
		return nil
	}
	obj := &object{}
	for _, name := range sortedKeys(p.Properties) {
		sd := p.Properties[name]
		obj.props = append(obj.props, prop{name: name, t: c.field(&sd), required: slices.Contains(p.Required, name)})
	}
	return obj
}

func (c converter) body(b *indigolex.SchemaBody) *body {
	if b == nil {
		return nil
	}
	out := &body{encoding: b.Encoding, desc: str(b.Description)}
	if b.Schema != nil {
		out.schema = c.field(b.Schema)
	}
	return out
}

func (c converter) field(sd *indigolex.SchemaDef) *typ {
	switch v := sd.Inner.(type) {
	case indigolex.SchemaString:
		t := &typ{kind: kString, desc: str(v.Description), format: str(v.Format), knownValues: v.KnownValues, enum: v.Enum}
		if v.Const != nil {
			t.enum = []string{*v.Const}
		}
		return t
	case indigolex.SchemaInteger:
		return &typ{kind: kInteger, desc: str(v.Description)}
	case indigolex.SchemaBoolean:
		return &typ{kind: kBoolean, desc: str(v.Description)}
	case indigolex.SchemaBytes:
		return &typ{kind: kBytes, desc: str(v.Description)}
	case indigolex.SchemaCIDLink:
		return &typ{kind: kCIDLink, desc: str(v.Description)}
	case indigolex.SchemaBlob:
		return &typ{kind: kBlob, desc: str(v.Description)}
	case indigolex.SchemaArray:
		return &typ{kind: kArray, desc: str(v.Description), items: c.field(&v.Items)}
	case indigolex.SchemaObject:
		return c.object(&v)
	case indigolex.SchemaRef:
		return &typ{kind: kRef, desc: str(v.Description), ref: c.fullRef(v.Ref)}
	case indigolex.SchemaUnion:
		t := &typ{kind: kUnion, desc: str(v.Description), closed: v.Closed != nil && *v.Closed}
		for _, r := range v.Refs {
			t.refs = append(t.refs, c.fullRef(r))
		}
		slices.Sort(t.refs)
		t.refs = slices.Compact(t.refs)
		return t
	case indigolex.SchemaUnknown:
		return &typ{kind: kUnknown, desc: str(v.Description)}
	}
	return &typ{kind: kUnknown}
}

func methodErrors(errs []indigolex.SchemaError) []methodError {
	var out []methodError
	for _, e := range errs {
		if e.Name != "" && !slices.ContainsFunc(out, func(x methodError) bool { return x.name == e.Name }) {
			out = append(out, methodError{name: e.Name, desc: str(e.Description)})
		}
	}
	slices.SortFunc(out, func(a, b methodError) int { return strings.Compare(a.name, b.name) })
	return out
}

// requires reports whether params require the parameter name.
func requires(params *object, name string) bool {
	if params == nil {
		return false
	}
	for _, p := range params.props {
		if p.name == name {
			return p.required
		}
	}
	return false
}

// typeID is the `$type` of the definition at ref: the NSID alone for a
// main definition.
func typeID(ref string) string { return strings.TrimSuffix(ref, "#main") }

func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// pascal joins the alphanumeric runs of s, each with its first letter
// upper-cased: "com.example.getNote" is "ComExampleGetNote".
func pascal(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
			up = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// camel is pascal with a lower-case first letter.
func camel(s string) string {
	p := pascal(s)
	if p == "" {
		return p
	}
	return strings.ToLower(p[:1]) + p[1:]
}

// typeName is a def's generated type name in both languages: the
// PascalCase NSID (lex-cli's module name), "_", then "Record" for a
// record, the PascalCase def name otherwise ("ComExampleDefs_View").
func typeName(d *def) string {
	base := pascal(d.nsid)
	if d.kind == dRecord && d.name == "main" {
		return base + "_Record"
	}
	if d.name == "main" {
		return base + "_Main"
	}
	return base + "_" + pascal(d.name)
}

// methodTypeName is the name of a method's type part: "_Params",
// "_Input", "_Output".
func methodTypeName(mt *method, part string) string { return pascal(mt.nsid) + "_" + part }

// checkNames fails when two generated type names collide.
func (m *model) checkNames() error {
	seen := map[string]string{}
	add := func(name, what string) error {
		if other, ok := seen[name]; ok {
			return fmt.Errorf("%s and %s would both be named %s", other, what, name)
		}
		seen[name] = what
		return nil
	}
	for _, d := range m.sortedDefs() {
		if d.kind == dMethod {
			continue
		}
		if err := add(typeName(d), d.ref); err != nil {
			return err
		}
	}
	for _, mt := range m.methods {
		for _, part := range []string{"Params", "Input", "Output", "RecordOutput"} {
			if err := add(methodTypeName(mt, part), mt.nsid+" "+strings.ToLower(part)); err != nil {
				return err
			}
		}
	}
	return nil
}

// pageable reports whether mt pages: an optional string parameter
// `cursor` and an output with an optional string `cursor`.
func pageable(mt *method, params *object) bool {
	optString := func(o *object) bool {
		if o == nil {
			return false
		}
		for _, p := range o.props {
			if p.name == "cursor" {
				return !p.required && p.t.kind == kString
			}
		}
		return false
	}
	if !optString(params) {
		return false
	}
	if mt.served != nil {
		return !mt.served.getOnly
	}
	return mt.output != nil && mt.output.json() && mt.output.schema != nil && mt.output.schema.kind == kObject && optString(mt.output.schema.obj)
}
