package codegen

import (
	"fmt"
	"strconv"
	"strings"
)

// tsNode is a level of the client's method tree: lex-cli's
// client.com.example.getNote(...).
type tsNode struct {
	children map[string]*tsNode
	leaves   map[string]string // name → the arrow function's source
}

func newTSNode() *tsNode { return &tsNode{children: map[string]*tsNode{}, leaves: map[string]string{}} }

// client writes the Client class with one function per method (and per
// default one-record answer), nested by NSID segment.
func (g *tsGen) client() error {
	root := newTSNode()
	for _, mt := range g.m.methods {
		segs := strings.Split(mt.nsid, ".")
		n := root
		for _, s := range segs[:len(segs)-1] {
			c := n.children[s]
			if c == nil {
				c = newTSNode()
				n.children[s] = c
			}
			n = c
		}
		name := segs[len(segs)-1]
		for leaf, src := range g.leaves(mt, name) {
			if _, dup := n.leaves[leaf]; dup {
				return fmt.Errorf("%s: two client functions would be named %s", mt.nsid, leaf)
			}
			n.leaves[leaf] = src
		}
	}
	if err := root.check(""); err != nil {
		return err
	}
	p := &g.p
	p.ln()
	p.ln("/**")
	p.ln(" * The app's XRPC methods, by NSID: client.com.example.getNote(params).")
	p.ln(" * Errors are thrown as XRPCError, or the method's declared error class.")
	p.ln(" */")
	p.ln("export class Client extends BaseClient {")
	for _, name := range sortedKeys(root.children) {
		p.ln("  readonly ", tsKey(name), " = ", root.children[name].source("  "))
	}
	p.ln("}")
	return nil
}

// check refuses a name that is both a method and a namespace.
func (n *tsNode) check(path string) error {
	for name, c := range n.children {
		if _, ok := n.leaves[name]; ok {
			return fmt.Errorf("%s%s is both a method and a namespace of methods", path, name)
		}
		if err := c.check(path + name + "."); err != nil {
			return err
		}
	}
	return nil
}

func (n *tsNode) source(indent string) string {
	var b strings.Builder
	b.WriteString("{\n")
	names := append(sortedKeys(n.children), sortedKeys(n.leaves)...)
	for _, name := range sortedKeys(map[string]bool(setOf(names))) {
		b.WriteString(indent + "  " + tsKey(name) + ": ")
		if c, ok := n.children[name]; ok {
			b.WriteString(c.source(indent + "  "))
		} else {
			b.WriteString(strings.ReplaceAll(n.leaves[name], "\n", "\n"+indent+"  "))
		}
		b.WriteString(",\n")
	}
	b.WriteString(indent + "}")
	return b.String()
}

func setOf(names []string) map[string]bool {
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out
}

// leaves returns the client functions of mt, by name.
func (g *tsGen) leaves(mt *method, name string) map[string]string {
	out := map[string]string{}
	errs, declared := "(e: XRPCError) => e", "[]"
	if len(mt.errors) > 0 {
		errs = camel(mt.nsid) + "Error"
		var names []string
		for _, e := range mt.errors {
			names = append(names, strconv.Quote(e.name))
		}
		declared = "[" + strings.Join(names, ", ") + "]"
	}
	output := "unknown"
	if mt.output != nil || mt.served != nil || mt.writes {
		output = methodTypeName(mt, "Output")
	}
	extra := ""
	if mt.output != nil && !mt.output.json() {
		extra = ", binaryOutput: true"
	}
	params := methodParams(mt)
	paramsType := methodTypeName(mt, "Params")
	call := func(method, paramsExpr, input, encoding string) string {
		s := fmt.Sprintf("this.call(%q, { method: '%s', params: %s", mt.nsid, method, paramsExpr)
		if input != "" {
			s += ", input: " + input
		}
		if encoding != "" {
			s += ", encoding: " + strconv.Quote(encoding)
		}
		return s + fmt.Sprintf(", errors: %s, declared: %s, opts%s })", errs, declared, extra)
	}
	if !mt.procedure {
		sig := "opts?: CallOptions"
		if params != nil {
			opt := "?"
			if anyRequired(params) {
				opt = ""
			}
			sig = "params" + opt + ": " + paramsType + ", " + sig
		}
		paramsExpr := "undefined"
		if params != nil {
			paramsExpr = "params"
		}
		out[name] = fmt.Sprintf("(%s): Promise<%s> =>\n  %s as Promise<%s>", sig, output, call("GET", paramsExpr, "", ""), output)
		if output != "unknown" && pageable(mt, params) {
			start := "params"
			if !anyRequired(params) {
				start = "params ?? {}"
			}
			out[name+"Pages"] = fmt.Sprintf("(%s): AsyncGenerator<%s, void, undefined> =>\n  paginate<%s, %s>((p) => %s as Promise<%s>, %s)",
				sig, output, paramsType, output, call("GET", "p", "", ""), output, start)
		}
		if mt.served != nil && !mt.served.getOnly {
			rec := methodTypeName(mt, "RecordOutput")
			out[name+"Record"] = fmt.Sprintf("(uri: string, opts?: CallOptions): Promise<%s> =>\n  %s as Promise<%s>", rec, call("GET", "{ uri }", "", ""), rec)
		}
		return out
	}
	var args []string
	input, encoding := "", ""
	if mt.input != nil || mt.writes {
		args = append(args, "input: "+methodTypeName(mt, "Input"))
		input = "input"
		if mt.input != nil {
			encoding = mt.input.encoding
		}
	}
	paramsExpr := "undefined"
	switch {
	case params != nil && anyRequired(params):
		args = append(args, "opts: CallOptions & { params: "+paramsType+" }")
		paramsExpr = "opts.params"
	case params != nil:
		args = append(args, "opts?: CallOptions & { params?: "+paramsType+" }")
		paramsExpr = "opts?.params"
	default:
		args = append(args, "opts?: CallOptions")
	}
	out[name] = fmt.Sprintf("(%s): Promise<%s> =>\n  %s as Promise<%s>", strings.Join(args, ", "), output, call("POST", paramsExpr, input, encoding), output)
	return out
}

func anyRequired(o *object) bool {
	for _, p := range o.props {
		if p.required {
			return true
		}
	}
	return false
}
