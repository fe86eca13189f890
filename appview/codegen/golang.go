package codegen

import (
	"fmt"
	"go/format"
	"go/token"
	"slices"
	"strconv"
	"strings"
)

// generateGo writes the Go package: client.go (the client machinery and
// shared types) and lexicons.go (the types and methods of the lexicons).
// Names follow the TypeScript module's; Go's conventions where they
// differ: optional fields are pointers (nil: absent), unions are structs
// with one pointer per member.
func generateGo(m *model, pkg string) (map[string][]byte, error) {
	files := map[string][]byte{}
	client := header(Go) + "\n// Package " + pkg + " is a typed client of a Lexview app's XRPC methods.\n" +
		"// It needs only the standard library (Go 1.23 or newer).\npackage " + pkg + "\n" + goRuntime
	src, err := format.Source([]byte(client))
	if err != nil {
		return nil, fmt.Errorf("client.go: %w", err)
	}
	files["client.go"] = src

	g := &goGen{m: m, imports: map[string]bool{}}
	for _, d := range m.sortedDefs() {
		g.def(d)
	}
	for _, mt := range m.methods {
		g.method(mt)
	}
	var head printer
	head.WriteString(header(Go))
	head.ln()
	head.ln("package ", pkg)
	if len(g.imports) > 0 {
		head.ln()
		head.ln("import (")
		for _, imp := range sortedKeys(g.imports) {
			head.ln("\t", strconv.Quote(imp))
		}
		head.ln(")")
	}
	src, err = format.Source(append(head.Bytes(), g.p.Bytes()...))
	if err != nil {
		return nil, fmt.Errorf("lexicons.go: %w", err)
	}
	files["lexicons.go"] = src
	return files, nil
}

type goGen struct {
	m       *model
	p       printer
	imports map[string]bool
	// pending are the inline objects and unions met while writing a
	// type, written after it.
	pending []goNamed
}

// goNamed is an inline type that needs a name in Go.
type goNamed struct {
	name string
	t    *typ
}

// goIdentifier turns a property name into an exported Go field name,
// with Go's spelling of common initialisms.
func goIdentifier(name string) string {
	p := pascal(name)
	for _, ini := range []string{"Uri", "Url", "Cid", "Did", "Id", "Json", "Http", "Api"} {
		if p == ini {
			return strings.ToUpper(p)
		}
		if strings.HasSuffix(p, ini) {
			p = strings.TrimSuffix(p, ini) + strings.ToUpper(ini)
		}
	}
	if p == "" || (p[0] >= '0' && p[0] <= '9') {
		p = "F" + p
	}
	return p
}

func isGoIdent(s string) bool { return token.IsIdentifier(s) && !token.IsKeyword(s) }

func (g *goGen) doc(name, desc string) {
	if desc == "" {
		return
	}
	g.p.comment("", "// ", name+" "+desc)
}

func (g *goGen) def(d *def) {
	name := typeName(d)
	switch d.kind {
	case dRecord, dObject:
		g.p.ln()
		what := "is the object " + typeID(d.ref)
		if d.kind == dRecord {
			what = "is a " + typeID(d.ref) + " record"
		}
		g.doc(name, strings.TrimSpace(what+". "+d.desc))
		g.structType(name, d.t.obj, true)
		if d.kind == dRecord {
			g.p.ln()
			g.p.ln("// ", pascal(d.nsid), "_Served is a ", typeID(d.ref), " record as Lexview serves it: with its uri and cid (the strong reference).")
			g.p.ln("type ", pascal(d.nsid), "_Served struct {")
			g.p.ln("\tURI string `json:\"uri\"`")
			if !hasProp(d.t.obj, "cid") { // its own cid is record data, kept as is
				g.p.ln("\tCID string `json:\"cid\"`")
			}
			g.p.ln("\t", name)
			g.p.ln("}")
		}
	case dToken:
		g.p.ln()
		g.doc(name, strings.TrimSpace("is the token "+typeID(d.ref)+". "+d.desc))
		g.p.f("const %s = %q\n", name, typeID(d.ref))
	case dOther:
		g.p.ln()
		doc := "is " + typeID(d.ref) + ". " + d.desc
		if vals := append(slices.Clone(d.t.enum), d.t.knownValues...); len(vals) > 0 {
			doc += " Values: " + strings.Join(vals, ", ") + "."
		}
		g.doc(name, strings.TrimSpace(doc))
		g.p.ln("type ", name, " = ", g.typ(d.t, name, false))
	}
	g.flush()
}

// flush writes the pending inline types.
func (g *goGen) flush() {
	for len(g.pending) > 0 {
		n := g.pending[0]
		g.pending = g.pending[1:]
		g.p.ln()
		switch n.t.kind {
		case kObject:
			g.structType(n.name, n.t.obj, false)
		case kUnion:
			g.union(n.name, n.t)
		}
	}
}

// structType writes an object's struct.
func (g *goGen) structType(name string, o *object, typed bool) {
	g.p.ln("type ", name, " struct {")
	if typed {
		g.p.ln("\tLexiconTypeID string `json:\"$type,omitempty\"`")
	}
	used := map[string]bool{"LexiconTypeID": true}
	for _, pr := range o.props {
		if pr.name == "$type" {
			continue
		}
		field := goIdentifier(pr.name)
		for used[field] {
			field += "_"
		}
		used[field] = true
		t := g.typ(pr.t, name+"_"+pascal(pr.name), !pr.required || pr.nullable)
		tag := pr.name
		if !pr.required {
			tag += ",omitempty"
		}
		var notes []string
		if pr.t.desc != "" {
			notes = append(notes, pr.t.desc)
		}
		if pr.t.kind == kString && pr.t.format != "" {
			notes = append(notes, "Format: "+pr.t.format+".")
		}
		if vals := append(slices.Clone(pr.t.enum), pr.t.knownValues...); len(vals) > 0 {
			notes = append(notes, "Values: "+strings.Join(vals, ", ")+".")
		}
		if len(notes) > 0 {
			g.p.comment("\t", "// ", strings.Join(notes, " "))
		}
		g.p.f("\t%s %s `json:%q`\n", field, t, tag)
	}
	g.p.ln("}")
}

// typ is the Go type of t; name names an inline object or union, and
// optional asks for a pointer where Go's zero value is a valid value.
func (g *goGen) typ(t *typ, name string, optional bool) string {
	ptr := func(s string) string {
		if optional {
			return "*" + s
		}
		return s
	}
	switch t.kind {
	case kString:
		return ptr("string")
	case kInteger:
		return ptr("int64")
	case kBoolean:
		return ptr("bool")
	case kBytes:
		return "Bytes"
	case kCIDLink:
		return ptr("CIDLink")
	case kBlob:
		return ptr("Blob")
	case kArray:
		return "[]" + g.typ(t.items, name+"_Elem", false)
	case kObject:
		g.pending = append(g.pending, goNamed{name: name, t: t})
		return ptr(name)
	case kUnion:
		g.pending = append(g.pending, goNamed{name: name, t: t})
		return ptr(name)
	case kRef:
		d := g.m.resolve(t.ref)
		switch {
		case d == nil || d.kind == dMethod:
		case d.kind == dToken:
			return ptr("string")
		case d.kind == dOther:
			switch d.t.kind {
			case kString, kInteger, kBoolean, kCIDLink, kBlob:
				return ptr(typeName(d))
			}
			return typeName(d)
		default:
			return "*" + typeName(d) // a pointer always: definitions may refer to themselves
		}
	}
	g.imports["encoding/json"] = true
	return "json.RawMessage"
}

// unionMembers are a union's members this client knows: the references
// to object and record definitions of the set.
func (g *goGen) unionMembers(t *typ) []*def {
	var out []*def
	for _, r := range t.refs {
		if d := g.m.resolve(r); d != nil && (d.kind == dObject || d.kind == dRecord) {
			out = append(out, d)
		}
	}
	return out
}

// union writes a union's struct and its JSON methods.
func (g *goGen) union(name string, t *typ) {
	g.imports["encoding/json"] = true
	members := g.unionMembers(t)
	closed := t.closed && len(members) == len(t.refs)
	var ids []string
	for _, r := range t.refs {
		ids = append(ids, typeID(r))
	}
	g.p.ln("// ", name, " is a union of ", strings.Join(ids, ", "), ": one member is set.")
	g.p.ln("type ", name, " struct {")
	for _, d := range members {
		g.p.ln("\t", typeName(d), " *", typeName(d))
	}
	if !closed {
		g.p.ln("\t// Unknown is a member of another $type (the union is open), as received.")
		g.p.ln("\tUnknown json.RawMessage")
	}
	g.p.ln("}")
	g.p.ln()
	g.p.ln("// MarshalJSON encodes the member set, with its $type.")
	g.p.ln("func (u ", name, ") MarshalJSON() ([]byte, error) {")
	g.p.ln("\tswitch {")
	for _, d := range members {
		f := typeName(d)
		g.p.f("\tcase u.%s != nil:\n\t\tv := *u.%s\n\t\tv.LexiconTypeID = %q\n\t\treturn json.Marshal(v)\n", f, f, typeID(d.ref))
	}
	if !closed {
		g.p.ln("\tcase u.Unknown != nil:\n\t\treturn u.Unknown, nil")
	}
	g.p.ln("\t}")
	g.p.ln("\treturn nil, errNoMember")
	g.p.ln("}")
	g.p.ln()
	g.p.ln("// UnmarshalJSON decodes the member its $type names.")
	g.p.ln("func (u *", name, ") UnmarshalJSON(data []byte) error {")
	g.p.ln("\tt, err := typeOf(data)")
	g.p.ln("\tif err != nil {\n\t\treturn err\n\t}")
	g.p.ln("\t*u = ", name, "{}")
	g.p.ln("\tswitch {")
	for _, d := range members {
		f := typeName(d)
		g.p.f("\tcase isType(t, %q):\n\t\tu.%s = new(%s)\n\t\treturn json.Unmarshal(data, u.%s)\n", typeID(d.ref), f, f, f)
	}
	g.p.ln("\t}")
	if closed {
		g.imports["fmt"] = true
		g.p.ln("\treturn fmt.Errorf(\"", name, ": unexpected $type %q\", t)")
	} else {
		g.p.ln("\tu.Unknown = append(json.RawMessage(nil), data...)")
		g.p.ln("\treturn nil")
	}
	g.p.ln("}")
}
