package codegen

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// generateTS writes the TypeScript module: one self-contained ES module,
// no imports, types as interfaces and aliases (no namespaces or enums),
// so that it compiles under --strict, --isolatedModules and
// --erasableSyntaxOnly and can be served to a browser as tsc emits it.
func generateTS(m *model) ([]byte, error) {
	g := &tsGen{m: m}
	p := &g.p
	p.WriteString(header(TypeScript))
	p.ln("// Types and a client of the app's XRPC methods (lexicons: ", strconv.Itoa(len(m.defs)), " definitions).")
	p.WriteString(tsRuntime)
	for _, d := range m.sortedDefs() {
		g.def(d)
	}
	for _, mt := range m.methods {
		g.method(mt)
	}
	if err := g.client(); err != nil {
		return nil, err
	}
	return p.Bytes(), nil
}

type tsGen struct {
	m *model
	p printer
}

var tsIdent = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// tsKey is a property name as an object type key.
func tsKey(name string) string {
	if tsIdent.MatchString(name) {
		return name
	}
	return strconv.Quote(name)
}

// tsDoc writes a JSDoc comment of desc (and a string's format).
func (g *tsGen) tsDoc(indent, desc string, t *typ) {
	var parts []string
	if desc != "" {
		parts = append(parts, desc)
	}
	if t != nil && t.kind == kString && t.format != "" {
		parts = append(parts, "Format: "+t.format+".")
	}
	if len(parts) == 0 {
		return
	}
	g.p.ln(indent, "/**")
	g.p.comment(indent, " * ", strings.Join(parts, "\n"))
	g.p.ln(indent, " */")
}

func (g *tsGen) def(d *def) {
	p := &g.p
	if d.kind == dMethod {
		return
	}
	name := typeName(d)
	p.ln()
	switch d.kind {
	case dRecord, dObject:
		g.tsDoc("", d.desc, nil)
		p.ln("export interface ", name, " {")
		if d.kind == dRecord {
			p.ln("  $type: ", strconv.Quote(typeID(d.ref)))
		} else {
			p.ln("  $type?: ", strconv.Quote(typeID(d.ref)))
		}
		g.props(d.t.obj, "  ")
		p.ln("}")
		p.ln()
		p.f("export function is%s<V>(v: V): v is V & $Typed<%s, %q> {\n  return isTyped(v, %q)\n}\n", name, name, typeID(d.ref), typeID(d.ref))
		if d.kind == dRecord {
			p.ln()
			p.ln("/** A ", typeID(d.ref), " record as Lexview serves it: with its `uri` and `cid` (the strong reference). */")
			if hasProp(d.t.obj, "cid") { // its own cid is record data, kept as is
				p.ln("export type ", pascal(d.nsid), "_Served = Omit<", name, ", 'uri'> & { uri: string }")
			} else {
				p.ln("export type ", pascal(d.nsid), "_Served = Omit<", name, ", 'uri' | 'cid'> & { uri: string; cid: string }")
			}
		}
	case dToken:
		g.tsDoc("", d.desc, nil)
		p.f("export const %s = %q\n", name, typeID(d.ref))
	case dOther:
		g.tsDoc("", d.desc, d.t)
		p.ln("export type ", name, " = ", g.typ(d.t, ""))
	}
}

func hasProp(o *object, name string) bool {
	return o != nil && slices.ContainsFunc(o.props, func(p prop) bool { return p.name == name })
}

// props writes an object's properties.
func (g *tsGen) props(o *object, indent string) {
	for _, pr := range o.props {
		g.tsDoc(indent, pr.t.desc, pr.t)
		t := g.typ(pr.t, indent)
		if pr.nullable {
			t += " | null"
		}
		opt := "?"
		if pr.required {
			opt = ""
		}
		g.p.ln(indent, tsKey(pr.name), opt, ": ", t)
	}
}

// typ is the TypeScript type of t; indent is the indentation of the
// line it appears on (for inline objects).
func (g *tsGen) typ(t *typ, indent string) string {
	switch t.kind {
	case kString:
		if len(t.enum) > 0 {
			return quoteAll(t.enum)
		}
		if len(t.knownValues) > 0 {
			return quoteAll(t.knownValues) + " | (string & {})"
		}
		return "string"
	case kInteger:
		return "number"
	case kBoolean:
		return "boolean"
	case kBytes:
		return "Bytes"
	case kCIDLink:
		return "CidLink"
	case kBlob:
		return "BlobRef"
	case kArray:
		item := g.typ(t.items, indent)
		if strings.ContainsAny(item, "|&") {
			item = "(" + item + ")"
		}
		return item + "[]"
	case kObject:
		var sub tsGen
		sub.m = g.m
		sub.props(t.obj, indent+"  ")
		if sub.p.Len() == 0 {
			return "{ [_ in string]: unknown }"
		}
		return "{\n" + sub.p.String() + indent + "}"
	case kRef:
		return g.refType(t.ref)
	case kUnion:
		var members []string
		for _, r := range t.refs {
			members = append(members, fmt.Sprintf("$Typed<%s, %q>", g.refType(r), typeID(r)))
		}
		if !t.closed || len(members) == 0 {
			members = append(members, "{ $type: string }")
		}
		return strings.Join(members, " | ")
	}
	return "{ [_ in string]: unknown }"
}

// refType is the type a reference names.
func (g *tsGen) refType(ref string) string {
	d := g.m.resolve(ref)
	switch {
	case d == nil || d.kind == dMethod:
		return "{ [_ in string]: unknown }"
	case d.kind == dToken:
		return "string"
	}
	return typeName(d)
}

func quoteAll(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
	}
	return strings.Join(q, " | ")
}

// method writes a method's types: params, input, output, errors.
func (g *tsGen) method(mt *method) {
	p := &g.p
	p.ln()
	p.ln("// ", mt.nsid, map[bool]string{true: " (procedure)", false: " (query)"}[mt.procedure])
	if params := methodParams(mt); params != nil {
		p.ln()
		p.ln("export interface ", methodTypeName(mt, "Params"), " {")
		g.props(params, "  ")
		p.ln("}")
	}
	switch {
	case mt.input != nil:
		p.ln()
		g.tsDoc("", mt.input.desc, nil)
		g.bodyType(methodTypeName(mt, "Input"), mt.input, "BinaryInput")
	case mt.writes:
		rec := "{ [_ in string]: unknown }"
		if mt.writesRecord != "" {
			rec = "Omit<" + typeName(g.m.resolve(mt.writesRecord)) + ", '$type'>"
		}
		p.ln()
		p.ln("/** The record to write; with `uri`, the AT URI of the caller's record it replaces. */")
		p.ln("export type ", methodTypeName(mt, "Input"), " = ", rec, " & { $type?: string; uri?: string }")
	}
	switch {
	case mt.output != nil:
		p.ln()
		g.tsDoc("", mt.output.desc, nil)
		g.bodyType(methodTypeName(mt, "Output"), mt.output, "Uint8Array")
	case mt.served != nil:
		rec := "UnknownServedRecord"
		if mt.served.record != "" {
			rec = pascal(typeID(mt.served.record)) + "_Served"
		}
		if !mt.served.getOnly {
			p.ln()
			p.ln("/** A page of ", mt.served.collection, " records, newest first; `cursor` is present when more exist. */")
			p.ln("export interface ", methodTypeName(mt, "Output"), " {\n  records: ", rec, "[]\n  cursor?: string\n  labels?: Label[]\n}")
		}
		p.ln()
		p.ln("/** One ", mt.served.collection, " record, by its `uri`. */")
		name := methodTypeName(mt, "RecordOutput")
		if mt.served.getOnly {
			name = methodTypeName(mt, "Output")
		}
		p.ln("export interface ", name, " {\n  record: ", rec, "\n  labels?: Label[]\n}")
	case mt.writes:
		p.ln()
		p.ln("/** The PDS's answer: Lexview writes the body as a ", "record of its target collection. */")
		p.ln("export type ", methodTypeName(mt, "Output"), " = WriteOutput")
	}
	if len(mt.errors) > 0 {
		for _, e := range mt.errors {
			cls := methodTypeName(mt, pascal(e.name)+"Error")
			p.ln()
			g.tsDoc("", fmt.Sprintf("The error %s of %s. %s", e.name, mt.nsid, e.desc), nil)
			p.ln("export class ", cls, " extends XRPCError {")
			p.ln("  constructor(e: XRPCError) {")
			p.ln("    super(e.status, e.error, e.message, e.body)")
			p.ln("    this.name = ", strconv.Quote(cls))
			p.ln("  }")
			p.ln("}")
		}
		p.ln()
		p.ln("function ", camel(mt.nsid), "Error(e: XRPCError): XRPCError {")
		p.ln("  switch (e.error) {")
		for _, e := range mt.errors {
			p.f("    case %q:\n      return new %s(e)\n", e.name, methodTypeName(mt, pascal(e.name)+"Error"))
		}
		p.ln("  }")
		p.ln("  return e")
		p.ln("}")
	}
}

// methodParams are the parameters of mt's Params type: the declared
// ones, and for a default list the ones Lexview reads (limit, cursor,
// did) that the lexicon leaves out.
func methodParams(mt *method) *object {
	if mt.served == nil || mt.served.getOnly {
		return mt.params
	}
	out := &object{}
	if mt.params != nil {
		out.props = slices.Clone(mt.params.props)
	}
	for _, extra := range []prop{
		{name: "cursor", t: &typ{kind: kString, desc: "The cursor of the previous page."}},
		{name: "did", t: &typ{kind: kString, desc: "Only the records of this account (a DID or a handle)."}},
		{name: "limit", t: &typ{kind: kInteger, desc: "Page size, 1 to 100; default 20."}},
	} {
		if !hasProp(out, extra.name) {
			out.props = append(out.props, extra)
		}
	}
	slices.SortFunc(out.props, func(a, b prop) int { return strings.Compare(a.name, b.name) })
	return out
}

// bodyType writes the type of a method's input or output.
func (g *tsGen) bodyType(name string, b *body, binary string) {
	p := &g.p
	switch {
	case !b.json():
		p.ln("export type ", name, " = ", binary)
	case b.schema == nil:
		p.ln("export type ", name, " = { [_ in string]: unknown }")
	case b.schema.kind == kObject:
		p.ln("export interface ", name, " {")
		g.props(b.schema.obj, "  ")
		p.ln("}")
	default:
		p.ln("export type ", name, " = ", g.typ(b.schema, ""))
	}
}
