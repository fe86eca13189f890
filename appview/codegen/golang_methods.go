package codegen

import (
	"fmt"
	"strconv"
	"strings"
)

// method writes a method's types (params, input, output, errors) and
// its client methods.
func (g *goGen) method(mt *method) {
	p := &g.p
	kind := "query"
	if mt.procedure {
		kind = "procedure"
	}
	p.ln()
	p.ln("// ", mt.nsid, " (", kind, ")")
	params := methodParams(mt)
	if params != nil {
		g.params(mt, params)
	}
	switch {
	case mt.input != nil:
		g.body(methodTypeName(mt, "Input"), mt.input, "the input of "+mt.nsid)
	case mt.writes:
		name := methodTypeName(mt, "Input")
		p.ln()
		p.ln("// ", name, " is the record to write; with URI, the AT URI of the caller's record it replaces.")
		if mt.writesRecord != "" {
			p.ln("type ", name, " struct {")
			p.ln("\tURI string `json:\"uri,omitempty\"`")
			p.ln("\t", typeName(g.m.resolve(mt.writesRecord)))
			p.ln("}")
		} else {
			p.ln("type ", name, " = map[string]any")
		}
	}
	output := ""
	switch {
	case mt.output != nil:
		output = methodTypeName(mt, "Output")
		g.body(output, mt.output, "the output of "+mt.nsid)
	case mt.served != nil:
		rec := "UnknownServedRecord"
		if mt.served.record != "" {
			rec = pascal(typeID(mt.served.record)) + "_Served"
		}
		output = methodTypeName(mt, "Output")
		if !mt.served.getOnly {
			p.ln()
			p.ln("// ", output, " is a page of ", mt.served.collection, " records, newest first; Cursor is set when more exist.")
			p.ln("type ", output, " struct {\n\tRecords []", rec, " `json:\"records\"`\n\tCursor *string `json:\"cursor,omitempty\"`\n\tLabels []Label `json:\"labels,omitempty\"`\n}")
		}
		one := methodTypeName(mt, "RecordOutput")
		if mt.served.getOnly {
			one = output
		}
		p.ln()
		p.ln("// ", one, " is one ", mt.served.collection, " record, by its uri.")
		p.ln("type ", one, " struct {\n\tRecord ", rec, " `json:\"record\"`\n\tLabels []Label `json:\"labels,omitempty\"`\n}")
	case mt.writes:
		output = methodTypeName(mt, "Output")
		p.ln()
		p.ln("// ", output, " is the PDS's answer: Lexview writes the input as a record of its target collection.")
		p.ln("type ", output, " = WriteOutput")
	}
	g.errors(mt)
	g.flush()
	g.client(mt, params, output)
}

// params writes a method's parameters struct and its encoding.
func (g *goGen) params(mt *method, params *object) {
	g.imports["net/url"] = true
	name := methodTypeName(mt, "Params")
	g.p.ln()
	g.p.ln("// ", name, " are the parameters of ", mt.nsid, ".")
	g.structType(name, params, false)
	g.p.ln()
	g.p.ln("func (p ", name, ") values() url.Values {")
	g.p.ln("\tv := url.Values{}")
	used := map[string]bool{"LexiconTypeID": true}
	for _, pr := range params.props {
		field := goIdentifier(pr.name)
		for used[field] {
			field += "_"
		}
		used[field] = true
		key := strconv.Quote(pr.name)
		t := pr.t
		if t.kind == kArray {
			g.p.f("\tfor _, x := range p.%s {\n\t\tv.Add(%s, %s)\n\t}\n", field, key, g.paramString(t.items, "x"))
			continue
		}
		if t.kind == kUnknown || t.kind == kRef {
			g.p.f("\tif len(p.%s) > 0 {\n\t\tv.Set(%s, string(p.%s))\n\t}\n", field, key, field)
			continue
		}
		if pr.required {
			g.p.f("\tv.Set(%s, %s)\n", key, g.paramString(t, "p."+field))
		} else {
			g.p.f("\tif p.%s != nil {\n\t\tv.Set(%s, %s)\n\t}\n", field, key, g.paramString(t, "*p."+field))
		}
	}
	g.p.ln("\treturn v")
	g.p.ln("}")
}

// paramString is the expression that formats x, a parameter of type t.
func (g *goGen) paramString(t *typ, x string) string {
	switch t.kind {
	case kInteger:
		g.imports["strconv"] = true
		return "strconv.FormatInt(" + x + ", 10)"
	case kBoolean:
		g.imports["strconv"] = true
		return "strconv.FormatBool(" + x + ")"
	case kString:
		return x
	}
	return "string(" + x + ")"
}

// body writes the type of a method's input or output.
func (g *goGen) body(name string, b *body, what string) {
	g.p.ln()
	g.doc(name, strings.TrimSpace("is "+what+". "+b.desc))
	switch {
	case !b.json():
		g.p.ln("type ", name, " = []byte")
	case b.schema == nil:
		g.imports["encoding/json"] = true
		g.p.ln("type ", name, " = json.RawMessage")
	case b.schema.kind == kObject:
		g.structType(name, b.schema.obj, false)
	case b.schema.kind == kUnion:
		g.union(name, b.schema)
	default:
		g.p.ln("type ", name, " = ", strings.TrimPrefix(g.typ(b.schema, name+"_Schema", false), "*"))
	}
}

// errorType is the Go type of a declared error.
func errorType(mt *method, name string) string { return methodTypeName(mt, pascal(name)+"Error") }

// errors writes a method's declared errors and their mapping.
func (g *goGen) errors(mt *method) {
	if len(mt.errors) == 0 {
		return
	}
	for _, e := range mt.errors {
		name := errorType(mt, e.name)
		g.p.ln()
		g.p.comment("", "// ", strings.TrimSpace(fmt.Sprintf("%s is the error %s of %s. %s", name, e.name, mt.nsid, e.desc)))
		g.p.ln("type ", name, " struct{ *XRPCError }")
		g.p.ln()
		g.p.ln("func (e *", name, ") Unwrap() error { return e.XRPCError }")
	}
	g.p.ln()
	g.p.ln("func ", camel(mt.nsid), "Error(e *XRPCError) error {")
	g.p.ln("\tswitch e.Name {")
	for _, e := range mt.errors {
		g.p.f("\tcase %q:\n\t\treturn &%s{e}\n", e.name, errorType(mt, e.name))
	}
	g.p.ln("\t}")
	g.p.ln("\treturn e")
	g.p.ln("}")
}

// client writes the Client methods of mt.
func (g *goGen) client(mt *method, params *object, output string) {
	g.imports["context"] = true
	fn := pascal(mt.nsid)
	errs := ""
	if len(mt.errors) > 0 {
		var names []string
		for _, e := range mt.errors {
			names = append(names, strconv.Quote(e.name))
		}
		errs = fmt.Sprintf(", errs: %sError, declared: []string{%s}", camel(mt.nsid), strings.Join(names, ", "))
	}
	var args []string
	req := fmt.Sprintf("method: %q, nsid: %q", map[bool]string{true: "POST", false: "GET"}[mt.procedure], mt.nsid)
	if params != nil {
		args = append(args, "params "+methodTypeName(mt, "Params"))
		req += ", params: params.values()"
	}
	if mt.input != nil || mt.writes {
		if mt.input != nil && !mt.input.json() {
			g.imports["io"] = true
			args = append(args, "contentType string", "input io.Reader")
			req += ", body: input, contentType: contentType"
		} else {
			args = append(args, "input "+methodTypeName(mt, "Input"))
			req += ", input: input, contentType: \"application/json\""
		}
	}
	doc := "// " + fn + " calls " + mt.nsid + "."
	if mt.desc != "" {
		doc += " " + mt.desc
	}
	g.p.ln()
	g.p.comment("", "", doc)
	sig := "ctx context.Context"
	if len(args) > 0 {
		sig += ", " + strings.Join(args, ", ")
	}
	switch {
	case output == "":
		g.imports["encoding/json"] = true
		g.p.f("func (c *Client) %s(%s) (json.RawMessage, error) {\n\tvar out json.RawMessage\n", fn, sig)
		g.p.f("\terr := c.do(ctx, request{%s, out: &out%s})\n\treturn out, err\n}\n", req, errs)
	case mt.output != nil && !mt.output.json():
		g.p.f("func (c *Client) %s(%s) ([]byte, error) {\n\tvar out []byte\n", fn, sig)
		g.p.f("\terr := c.do(ctx, request{%s, rawOut: &out%s})\n\treturn out, err\n}\n", req, errs)
	default:
		g.p.f("func (c *Client) %s(%s) (*%s, error) {\n\tvar out %s\n", fn, sig, output, output)
		g.p.f("\tif err := c.do(ctx, request{%s, out: &out%s}); err != nil {\n\t\treturn nil, err\n\t}\n\treturn &out, nil\n}\n", req, errs)
	}
	if mt.served != nil && !mt.served.getOnly {
		one := methodTypeName(mt, "RecordOutput")
		g.imports["net/url"] = true
		g.p.ln()
		g.p.ln("// ", fn, "Record calls ", mt.nsid, " for one record, by its AT URI.")
		g.p.f("func (c *Client) %sRecord(ctx context.Context, uri string) (*%s, error) {\n\tvar out %s\n", fn, one, one)
		g.p.f("\tif err := c.do(ctx, request{method: \"GET\", nsid: %q, params: url.Values{\"uri\": {uri}}, out: &out%s}); err != nil {\n\t\treturn nil, err\n\t}\n\treturn &out, nil\n}\n", mt.nsid, errs)
	}
	if !mt.procedure && output != "" && pageable(mt, params) {
		g.imports["iter"] = true
		g.imports["errors"] = true
		g.p.ln()
		g.p.ln("// ", fn, "Pages calls ", mt.nsid, " page after page, from params' cursor, until an answer has no cursor or the loop stops.")
		g.p.f("func (c *Client) %sPages(ctx context.Context, params %s) iter.Seq2[*%s, error] {\n", fn, methodTypeName(mt, "Params"), output)
		g.p.f("\treturn func(yield func(*%s, error) bool) {\n\t\tfor {\n", output)
		g.p.f("\t\t\tout, err := c.%s(ctx, params)\n\t\t\tif !yield(out, err) || err != nil {\n\t\t\t\treturn\n\t\t\t}\n", fn)
		g.p.ln("\t\t\tif out.Cursor == nil || *out.Cursor == \"\" {\n\t\t\t\treturn\n\t\t\t}")
		g.p.ln("\t\t\tif params.Cursor != nil && *params.Cursor == *out.Cursor {\n\t\t\t\tyield(nil, errors.New(\"", mt.nsid, ": the cursor did not advance\"))\n\t\t\t\treturn\n\t\t\t}")
		g.p.ln("\t\t\tparams.Cursor = out.Cursor\n\t\t}\n\t}\n}")
	}
}
