package sqlstore

import (
	"strings"
	"unicode/utf8"
)

// maxRawSQL bounds the length of a raw statement.
const maxRawSQL = 64 << 10

func refuse(format string, a ...any) error { return RawRefused(format, a...) }

// guardRaw checks a script's raw statement and reports whether it writes.
// It accepts exactly one SELECT or WITH statement (a read) or one INSERT,
// UPDATE or DELETE statement changing the records table (a write). Every
// relation the statement reads must be on the allow-list (RawRelations,
// the statement's own common table expressions, rawTableFunctions),
// unqualified; the names of the schema's other tables, of system catalogs
// and of restricted functions are refused anywhere, quoted or not, in any
// letter case.
func guardRaw(stmt string, syn Syntax) (write bool, err error) {
	if len(stmt) > maxRawSQL {
		return false, refuse("statement longer than %d bytes", maxRawSQL)
	}
	if !utf8.ValidString(stmt) || strings.IndexByte(stmt, 0) >= 0 {
		return false, refuse("statement is not valid UTF-8 text")
	}
	toks, err := lexSQL(stmt, syn)
	if err != nil {
		return false, err
	}
	for i, t := range toks {
		if t.kind == tokPunct && t.text == ";" && i != len(toks)-1 {
			return false, refuse("only one statement is allowed")
		}
	}
	if n := len(toks); n > 0 && toks[n-1].kind == tokPunct && toks[n-1].text == ";" {
		toks = toks[:n-1]
	}
	if len(toks) == 0 {
		return false, refuse("empty statement")
	}
	first := toks[0]
	if first.kind != tokWord {
		return false, refuse("a statement must start with SELECT, WITH, INSERT, UPDATE or DELETE")
	}
	switch first.text {
	case "select", "with":
	case "insert", "update", "delete":
		write = true
	default:
		return false, refuse("%s statements are not allowed (only SELECT, WITH, INSERT, UPDATE and DELETE)",
			strings.ToUpper(first.text))
	}
	for _, t := range toks {
		if t.kind != tokWord && t.kind != tokQuoted {
			continue
		}
		if why := refusal(t.text); why != "" {
			return false, refuse("%s", why)
		}
		if !write && t.kind == tokWord {
			switch t.text {
			case "insert", "update", "delete", "merge", "into":
				return false, refuse("a read may not contain %s", strings.ToUpper(t.text))
			}
		}
	}
	if err := checkRelations(stmt, toks, syn, write); err != nil {
		return false, err
	}
	return write, nil
}
