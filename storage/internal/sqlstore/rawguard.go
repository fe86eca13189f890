package sqlstore

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/lexview/lexview/storage"
)

// Syntax selects the lexical rules of the raw-statement guard, which must
// match the database's own: a lexer that saw a string or a comment where
// the database sees code would let names through unchecked.
type Syntax int

const (
	// SyntaxSQLite: '' escapes in strings; "", [] and `` quote
	// identifiers; -- comments end at a newline; /* */ does not nest;
	// parameters ($a, :a, @a, #a) may carry Tcl-style "::" and "(...)"
	// suffixes.
	SyntaxSQLite Syntax = iota
	// SyntaxPostgres: also E'' strings with backslash escapes (continued
	// across newlines by further '' segments under the same rules) and
	// $tag$ dollar quoting; "" quotes identifiers; -- comments end at a
	// newline or carriage return; /* */ nests. Standard-conforming strings
	// are assumed (BeginRaw sets them).
	SyntaxPostgres
)

// maxRawSQL bounds the length of a raw statement.
const maxRawSQL = 64 << 10

type tokenKind int

const (
	tokWord   tokenKind = iota // unquoted identifier or keyword, ASCII-lowercased
	tokQuoted                  // quoted identifier, quotes removed, ASCII-lowercased
	tokString                  // string literal body (escapes left as written)
	tokNumber
	tokParam // a SQLite parameter with a name
	tokPunct // one byte of anything else
)

type token struct {
	kind       tokenKind
	text       string
	start, end int // byte span in the statement
}

// sensitiveTables hold credentials, secrets, sessions, configuration or
// script inputs; raw statements may not name them at all.
var sensitiveTables = map[string]bool{
	"admin_users":      true,
	"admin_api_keys":   true,
	"api_clients":      true,
	"client_auth_keys": true,
	"device_sessions":  true,
	"dpop_provisions":  true,
	"event_log":        true,
	"settings":         true,
	"setting_blobs":    true,
	"scripts":          true,
	"script_variables": true,
}

// knownTables are the other tables of the schema. Writes may name none of
// them but records.
var knownTables = map[string]bool{
	"records":           true,
	"record_tombstones": true,
	"lexicons":          true,
	"stream_cursors":    true,
	"backfill_jobs":     true,
	"backfill_repos":    true,
	"dead_letters":      true,
	"schema_migrations": true,
}

// deniedNames are catalogs and functions that reach files, the network,
// server configuration, or run SQL given as a string.
var deniedNames = setOf(
	// SQLite
	"load_extension", "readfile", "writefile", "edit", "fsdir", "zipfile", "sqlar_compress",
	"sqlar_uncompress", "fts3_tokenizer", "dbstat",
	// PostgreSQL
	"information_schema", "current_setting", "set_config", "query_to_xml", "query_to_xmlschema",
	"query_to_xml_and_xmlschema", "table_to_xml", "table_to_xmlschema", "table_to_xml_and_xmlschema",
	"cursor_to_xml", "cursor_to_xmlschema", "schema_to_xml", "schema_to_xmlschema",
	"schema_to_xml_and_xmlschema", "database_to_xml", "database_to_xmlschema",
	"database_to_xml_and_xmlschema", "ts_stat", "ts_rewrite", "connectby", "xpath_table", "lo_import",
	"lo_export", "lo_get", "lo_put", "lo_from_bytea", "lo_create", "lo_creat", "lo_open", "lo_close",
	"lo_unlink", "lo_truncate", "lo_truncate64", "lo_lseek", "lo_lseek64", "lo_tell", "lo_tell64",
	"loread", "lowrite", "regclass", "regproc", "regprocedure", "regoper", "regoperator", "regtype",
	"regnamespace", "regrole", "regconfig", "regdictionary", "regcollation", "inet_server_addr",
	"inet_server_port", "inet_client_addr", "inet_client_port", "nextval", "setval",
)

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// deniedPrefixes cover families of catalogs and functions.
var deniedPrefixes = []string{"sqlite_", "pragma_", "pg_", "dblink", "binary_upgrade", "to_reg", "crosstab"}

// refusal explains why a name may not appear in a raw statement, or is "".
func refusal(name string) string {
	switch {
	case sensitiveTables[name]:
		return fmt.Sprintf("table %s is not accessible to scripts", name)
	case deniedNames[name]:
		return fmt.Sprintf("%s is a system catalog or a restricted function", name)
	}
	for _, p := range deniedPrefixes {
		if strings.HasPrefix(name, p) {
			return fmt.Sprintf("%s is a system catalog or a restricted function (%s*)", name, p)
		}
	}
	return ""
}

func refuse(format string, a ...any) error {
	return fmt.Errorf("%w: raw SQL refused: %s", storage.ErrInvalidQuery, fmt.Sprintf(format, a...))
}

// guardRaw checks a script's raw statement and reports whether it writes.
// It accepts exactly one SELECT or WITH statement (a read) or one INSERT,
// UPDATE or DELETE statement referencing only the records table (a write),
// and refuses any name of a sensitive table, system catalog or restricted
// function, quoted or not, in any letter case.
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
		switch t.kind {
		case tokWord, tokQuoted:
			if why := refusal(t.text); why != "" {
				return false, refuse("%s", why)
			}
			if !write && t.kind == tokWord {
				switch t.text {
				case "insert", "update", "delete", "merge", "into":
					return false, refuse("a read may not contain %s", strings.ToUpper(t.text))
				}
			}
		case tokString:
			// SQLite takes a quoted string as a table name where one is
			// expected: FROM 'settings'.
			if name := asciiLower(t.text); identLike(name) && refusal(name) != "" {
				return false, refuse("string literal %q names a restricted table or catalog", truncate(t.text, 40))
			}
		}
	}
	if write {
		if err := checkWriteTargets(toks); err != nil {
			return false, err
		}
	}
	return write, nil
}

func identLike(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isIdentByte(s[i]) {
			return false
		}
	}
	return s != ""
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// nonCallWords precede a parenthesis that is not a function call.
var nonCallWords = map[string]bool{
	"in": true, "exists": true, "any": true, "all": true, "some": true, "values": true, "as": true,
	"from": true, "join": true, "using": true, "lateral": true, "on": true, "where": true, "and": true,
	"or": true, "not": true, "select": true, "with": true, "when": true, "then": true, "else": true,
	"union": true, "intersect": true, "except": true, "into": true, "set": true, "returning": true,
	"by": true, "having": true, "case": true, "is": true, "like": true, "between": true, "recursive": true,
	"array": true,
}

// checkWriteTargets makes sure a write references no table but records:
// the table after INSERT INTO, UPDATE or DELETE FROM, and every table after
// FROM, JOIN or USING, must be records, unqualified; no other known table
// may be named anywhere.
func checkWriteTargets(toks []token) error {
	var callParen []bool // per open parenthesis: opened by a function call?
	for i, t := range toks {
		switch {
		case t.kind == tokPunct && t.text == "(":
			call := i > 0 && (toks[i-1].kind == tokWord && !nonCallWords[toks[i-1].text] || toks[i-1].kind == tokQuoted)
			callParen = append(callParen, call)
			continue
		case t.kind == tokPunct && t.text == ")":
			if len(callParen) > 0 {
				callParen = callParen[:len(callParen)-1]
			}
			continue
		case t.kind != tokWord && t.kind != tokQuoted:
			continue
		}
		if t.text != "records" && knownTables[t.text] {
			return refuse("a write may only reference the records table, not %s", t.text)
		}
		if t.kind != tokWord {
			continue
		}
		inCall := len(callParen) > 0 && callParen[len(callParen)-1]
		switch t.text {
		case "from":
			// EXTRACT(x FROM y), SUBSTRING(x FROM n), a IS DISTINCT FROM b
			if inCall || i > 0 && toks[i-1].kind == tokWord && toks[i-1].text == "distinct" {
				continue
			}
		case "join", "into", "using":
		case "update":
			if i != 0 {
				continue // ON CONFLICT DO UPDATE, FOR UPDATE
			}
		default:
			continue
		}
		j := i + 1
		if t.text == "update" && j+1 < len(toks) && toks[j].kind == tokWord && toks[j].text == "or" {
			j += 2 // UPDATE OR IGNORE
		}
		if j < len(toks) && toks[j].kind == tokWord && (toks[j].text == "only" || toks[j].text == "lateral") {
			j++
		}
		if j >= len(toks) || toks[j].kind == tokPunct && toks[j].text == "(" {
			continue
		}
		target := toks[j]
		if target.kind != tokWord && target.kind != tokQuoted {
			return refuse("a write may only reference the records table")
		}
		if j+1 < len(toks) && toks[j+1].kind == tokPunct && toks[j+1].text == "(" && t.text != "into" && t.text != "update" {
			continue // a table function: FROM json_each(?), FROM unnest($1)
		}
		if j+1 < len(toks) && toks[j+1].kind == tokPunct && toks[j+1].text == "." {
			return refuse("a write may only reference the records table, unqualified")
		}
		if target.text != "records" {
			return refuse("a write may only reference the records table, not %s", target.text)
		}
	}
	return nil
}

func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// isIdentStart reports whether c starts an unquoted identifier. Both
// databases also take non-ASCII letters; the lexer refuses them instead
// (SQLite, for one, skips a byte-order mark at the start of a token).
func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

func isIdentByte(c byte) bool {
	return isIdentStart(c) || c >= '0' && c <= '9' || c == '$'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// lexSQL splits a statement into tokens, dropping whitespace and comments.
// Unterminated strings, identifiers and comments are refused, and so are
// PostgreSQL's Unicode-escape (U&) literals, which could spell any name,
// and non-ASCII characters outside strings, quoted identifiers and
// comments.
func lexSQL(src string, syn Syntax) ([]token, error) {
	pg := syn == SyntaxPostgres
	var toks []token
	at := func(i int) byte {
		if i < len(src) {
			return src[i]
		}
		return 0
	}
	for i := 0; i < len(src); {
		c := src[i]
		start := i
		switch {
		case isSpace(c):
			i++
		case c >= 0x80:
			return nil, refuse("non-ASCII characters are allowed only in strings, quoted identifiers and comments")
		case c == '-' && at(i+1) == '-':
			for i < len(src) && src[i] != '\n' && !(pg && src[i] == '\r') {
				i++
			}
		case c == '/' && at(i+1) == '*':
			depth := 1
			i += 2
			for depth > 0 {
				switch {
				case i >= len(src):
					return nil, refuse("unterminated comment")
				case pg && src[i] == '/' && at(i+1) == '*':
					depth++
					i += 2
				case src[i] == '*' && at(i+1) == '/':
					depth--
					i += 2
				default:
					i++
				}
			}
		case pg && (c == 'u' || c == 'U') && at(i+1) == '&' && (at(i+2) == '\'' || at(i+2) == '"'):
			return nil, refuse("Unicode-escaped (U&) literals are not allowed")
		case pg && (c == 'e' || c == 'E') && at(i+1) == '\'':
			end, err := scanQuoted(src, i+1, '\'', true)
			for err == nil {
				next := pgContinuation(src, end)
				if next < 0 {
					break
				}
				end, err = scanQuoted(src, next, '\'', true)
			}
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{tokString, src[i+2 : end-1], start, end})
			i = end
		case !pg && (c == '$' || c == ':' || c == '@' || c == '#'):
			end, err := sqliteParam(src, i)
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{tokParam, src[start:end], start, end})
			i = end
		case c == '\'':
			end, err := scanQuoted(src, i, '\'', false)
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{tokString, strings.ReplaceAll(src[i+1:end-1], "''", "'"), start, end})
			i = end
		case c == '"' || !pg && c == '`':
			end, err := scanQuoted(src, i, c, false)
			if err != nil {
				return nil, err
			}
			name := strings.ReplaceAll(src[i+1:end-1], string([]byte{c, c}), string(c))
			toks = append(toks, token{tokQuoted, asciiLower(name), start, end})
			i = end
		case !pg && c == '[':
			end := strings.IndexByte(src[i+1:], ']')
			if end < 0 {
				return nil, refuse("unterminated [identifier]")
			}
			end += i + 2
			toks = append(toks, token{tokQuoted, asciiLower(src[i+1 : end-1]), start, end})
			i = end
		case pg && c == '$' && dollarTag(src[i:]) != "":
			tag := dollarTag(src[i:])
			body := i + len(tag)
			n := strings.Index(src[body:], tag)
			if n < 0 {
				return nil, refuse("unterminated dollar-quoted string")
			}
			i = body + n + len(tag)
			toks = append(toks, token{tokString, src[body : body+n], start, i})
		case isIdentStart(c):
			for i < len(src) && isIdentByte(src[i]) {
				i++
			}
			toks = append(toks, token{tokWord, asciiLower(src[start:i]), start, i})
		case isDigit(c) || c == '.' && isDigit(at(i+1)):
			for i < len(src) && (isDigit(src[i]) || src[i] == '_') {
				i++
			}
			if at(i) == '.' {
				i++
				for i < len(src) && (isDigit(src[i]) || src[i] == '_') {
					i++
				}
			}
			if (at(i) == 'e' || at(i) == 'E') && (isDigit(at(i+1)) || (at(i+1) == '+' || at(i+1) == '-') && isDigit(at(i+2))) {
				i += 2
				for i < len(src) && isDigit(src[i]) {
					i++
				}
			}
			toks = append(toks, token{tokNumber, src[start:i], start, i})
		default:
			i++
			toks = append(toks, token{tokPunct, src[start:i], start, i})
		}
	}
	return toks, nil
}

// scanQuoted returns the end (exclusive) of the quoted text opening at
// src[open] with quote q, where a doubled quote stands for itself and, with
// backslash, a backslash escapes the next byte.
func scanQuoted(src string, open int, q byte, backslash bool) (int, error) {
	for i := open + 1; i < len(src); i++ {
		switch src[i] {
		case '\\':
			if backslash {
				i++
			}
		case q:
			if i+1 < len(src) && src[i+1] == q {
				i++
				continue
			}
			return i + 1, nil
		}
	}
	what := "string"
	if q != '\'' {
		what = "quoted identifier"
	}
	return 0, refuse("unterminated %s", what)
}

// pgContinuation returns where a PostgreSQL string continues after its
// closing quote at end-1: the opening quote of a next segment separated by
// whitespace holding a newline (and perhaps -- comments), or -1. It may
// see a continuation where PostgreSQL sees two adjacent literals, a syntax
// error: then the statement fails anyway.
func pgContinuation(src string, end int) int {
	newline := false
	for j := end; j < len(src); {
		switch c := src[j]; {
		case c == '\n' || c == '\r':
			newline = true
			j++
		case isSpace(c):
			j++
		case c == '-' && j+1 < len(src) && src[j+1] == '-':
			for j < len(src) && src[j] != '\n' && src[j] != '\r' {
				j++
			}
		case c == '\'' && newline:
			return j
		default:
			return -1
		}
	}
	return -1
}

// sqliteParam returns the end of the SQLite parameter starting at src[i]
// ($, :, @ or #): identifier characters, "::" pairs, and a "(...)" suffix
// running to the first space or ')', whatever it holds, quotes included.
func sqliteParam(src string, i int) (int, error) {
	j, n := i+1, 0
	for j < len(src) {
		switch c := src[j]; {
		case isIdentByte(c):
			n++
			j++
		case c == '(' && n > 0:
			for j++; j < len(src) && !isSpace(src[j]) && src[j] != ')'; j++ {
			}
			if j >= len(src) || src[j] != ')' {
				return 0, refuse("malformed parameter name")
			}
			return j + 1, nil
		case c == ':' && j+1 < len(src) && src[j+1] == ':':
			j += 2
		default:
			if n == 0 {
				return 0, refuse("malformed parameter name")
			}
			return j, nil
		}
	}
	if n == 0 {
		return 0, refuse("malformed parameter name")
	}
	return j, nil
}

// dollarTag returns the $tag$ opening a PostgreSQL dollar-quoted string at
// the start of s, or "".
func dollarTag(s string) string {
	if len(s) < 2 || s[0] != '$' {
		return ""
	}
	i := 1
	if s[i] != '$' {
		if !isIdentStart(s[i]) {
			return ""
		}
		for i < len(s) && isIdentByte(s[i]) && s[i] != '$' {
			i++
		}
		if i >= len(s) || s[i] != '$' {
			return ""
		}
	}
	return s[:i+1]
}
