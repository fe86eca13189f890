package sqlstore

import "strings"

// fromSyntaxCalls are the functions whose arguments may hold FROM:
// EXTRACT(field FROM x), SUBSTRING(x FROM n FOR m), TRIM(BOTH c FROM x),
// OVERLAY(x PLACING y FROM n). Inside them FROM names no relation.
var fromSyntaxCalls = setOf("extract", "substring", "trim", "overlay")

// fromListEnds end a FROM (or USING) list: after one of them, a comma at
// the same level of parentheses no longer starts another relation.
var fromListEnds = setOf("where", "group", "having", "window", "order", "limit", "offset", "fetch", "for",
	"union", "intersect", "except", "returning", "set", "select", "values", "conflict", "do")

// relWalker finds every place of a statement where a relation is named
// and checks it against the allow-list: after FROM, JOIN, USING, TABLE
// (PostgreSQL's TABLE name), INTO, a leading UPDATE, SQLite's "x IN name",
// and after each comma of a FROM list; also the first item of a
// parenthesised join. Anything there must be an allowed relation, a common
// table expression in scope, an allowed table function or a parenthesised
// subquery or join (whose contents are checked the same way).
type relWalker struct {
	stmt      string
	toks      []token
	syn       Syntax
	closeOf   map[int]int // "(" index -> matching ")" index (len(toks) if none)
	parent    []int       // innermost "(" around each token, or -1
	ctes      []cteScope
	itemParen map[int]bool // "(" opening a FROM item
}

// cteScope is a common table expression and the token range where its
// name refers to it: after its own body (for a recursive WITH, from the
// WITH on) to the end of the parentheses holding the WITH.
type cteScope struct {
	name     string
	from, to int
}

// walkFrame is the state of one level of parentheses.
type walkFrame struct {
	call       bool // opened by a call of fromSyntaxCalls
	fromList   bool // within a FROM or USING list: a comma starts a relation
	expectItem bool // a parenthesised FROM item: its first token may be a relation
}

func checkRelations(stmt string, toks []token, syn Syntax, write bool) error {
	w := &relWalker{stmt: stmt, toks: toks, syn: syn, closeOf: map[int]int{}, parent: make([]int, len(toks)),
		itemParen: map[int]bool{}}
	var open []int
	for i, t := range toks {
		w.parent[i] = -1
		if len(open) > 0 {
			w.parent[i] = open[len(open)-1]
		}
		switch {
		case t.kind == tokPunct && t.text == "(":
			open = append(open, i)
			w.closeOf[i] = len(toks)
		case t.kind == tokPunct && t.text == ")" && len(open) > 0:
			w.closeOf[open[len(open)-1]] = i
			open = open[:len(open)-1]
		}
	}
	for i := range toks {
		if w.isWord(i, "with") {
			w.addCTEs(i)
		}
	}
	return w.walk(write)
}

func (w *relWalker) isWord(i int, word string) bool {
	return i >= 0 && i < len(w.toks) && w.toks[i].kind == tokWord && w.toks[i].text == word
}

func (w *relWalker) isPunct(i int, p string) bool {
	return i >= 0 && i < len(w.toks) && w.toks[i].kind == tokPunct && w.toks[i].text == p
}

// name is how the database resolves the identifier at i: case-folded,
// except for PostgreSQL's quoted names, which are case-sensitive.
func (w *relWalker) name(i int) string {
	t := w.toks[i]
	if t.kind == tokQuoted && w.syn == SyntaxPostgres {
		return strings.ReplaceAll(w.stmt[t.start+1:t.end-1], `""`, `"`)
	}
	return t.text
}

// addCTEs records the common table expressions of the WITH at i:
// WITH [RECURSIVE] name [(columns)] AS [[NOT] MATERIALIZED] (body) [, ...].
// A WITH that does not parse so (WITH ORDINALITY, WITH TIME ZONE) adds
// nothing.
func (w *relWalker) addCTEs(with int) {
	to := len(w.toks)
	if p := w.parent[with]; p >= 0 {
		to = w.closeOf[p]
	}
	j, recursive := with+1, w.isWord(with+1, "recursive")
	if recursive {
		j++
	}
	for j < len(w.toks) && (w.toks[j].kind == tokWord || w.toks[j].kind == tokQuoted) {
		name, k := w.name(j), j+1
		if w.isPunct(k, "(") {
			k = w.closeOf[k] + 1
		}
		if !w.isWord(k, "as") {
			return
		}
		k++
		if w.isWord(k, "not") {
			k++
		}
		if w.isWord(k, "materialized") {
			k++
		}
		if !w.isPunct(k, "(") {
			return
		}
		end := w.closeOf[k]
		from := end
		if recursive {
			from = with
		}
		w.ctes = append(w.ctes, cteScope{name: name, from: from, to: to})
		if !w.isPunct(end+1, ",") {
			return
		}
		j = end + 2
	}
}

func (w *relWalker) cteVisible(name string, at int) bool {
	for _, c := range w.ctes {
		if c.name == name && c.from < at && at < c.to {
			return true
		}
	}
	return false
}

// distinctFrom reports whether the FROM at i ends IS [NOT] DISTINCT FROM.
func (w *relWalker) distinctFrom(i int) bool {
	return w.isWord(i-1, "distinct") && (w.isWord(i-2, "is") || w.isWord(i-2, "not") && w.isWord(i-3, "is"))
}

func (w *relWalker) walk(write bool) error {
	stack := []walkFrame{{}}
	for i, t := range w.toks {
		top := &stack[len(stack)-1]
		if top.expectItem {
			top.expectItem = false
			switch {
			case w.isPunct(i, "("):
				w.itemParen[i] = true
			case w.isWord(i, "select"), w.isWord(i, "with"), w.isWord(i, "values"), w.isWord(i, "table"):
			default:
				top.fromList = true
				if err := w.item(i, false); err != nil {
					return err
				}
			}
		}
		var err error
		switch {
		case t.kind == tokPunct && t.text == "(":
			call := i > 0 && w.toks[i-1].kind == tokWord && fromSyntaxCalls[w.toks[i-1].text]
			stack = append(stack, walkFrame{call: call, expectItem: w.itemParen[i]})
		case t.kind == tokPunct && t.text == ")":
			if len(stack) > 1 {
				stack = stack[:len(stack)-1]
			}
		case t.kind == tokPunct && t.text == ",":
			if top.fromList {
				err = w.item(i+1, false)
			}
		case t.kind != tokWord:
		case t.text == "from":
			if top.call || w.distinctFrom(i) {
				continue
			}
			top.fromList = true
			err = w.item(i+1, write && i == 1 && w.isWord(0, "delete"))
		case t.text == "join":
			top.fromList = true
			err = w.item(i+1, false)
		case t.text == "using":
			if !w.isPunct(i+1, "(") {
				top.fromList = true
				err = w.item(i+1, false)
			}
		case t.text == "into":
			err = w.item(i+1, true) // reads may not contain INTO
		case t.text == "update" && i == 0:
			j := i + 1
			if w.isWord(j, "or") {
				j += 2 // UPDATE OR IGNORE
			}
			err = w.item(j, true)
		case t.text == "table":
			err = w.item(i+1, false)
		case t.text == "in":
			if w.syn == SyntaxSQLite && !w.isPunct(i+1, "(") {
				err = w.item(i+1, false) // SQLite's "x IN table"
			}
		case fromListEnds[t.text]:
			top.fromList = false
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// item checks the relation named at j. A target is the table a write
// changes.
func (w *relWalker) item(j int, target bool) error {
	for w.isWord(j, "only") || w.isWord(j, "lateral") {
		j++
	}
	if j >= len(w.toks) {
		return nil // a syntax error, for the database to report
	}
	t := w.toks[j]
	if t.kind == tokPunct && t.text == "(" {
		if target {
			return refuse("a write may only change the %s table", RawWriteTable)
		}
		w.itemParen[j] = true
		return nil
	}
	if t.kind != tokWord && t.kind != tokQuoted {
		return refuse("a table must be named by an identifier, not %q", truncate(w.stmt[t.start:t.end], 40))
	}
	if w.isPunct(j+1, ".") {
		return refuse("relations must be named unqualified, not %s.%s", t.text,
			truncate(w.stmt[t.end+1:min(len(w.stmt), t.end+41)], 20))
	}
	name := w.name(j)
	if target {
		if name != RawWriteTable {
			return refuse("a write may only change the %s table, not %s", RawWriteTable, name)
		}
		return nil
	}
	if w.isPunct(j+1, "(") {
		if t.kind == tokWord && rawTableFunctions[name] {
			return nil
		}
		return refuse("%s is not a table function scripts may use", name)
	}
	if rawRelations[name] || w.cteVisible(name, j) {
		return nil
	}
	return refuse("%s is not a relation scripts may read (%s)", name, readableList())
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
