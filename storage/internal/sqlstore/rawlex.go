package sqlstore

import "strings"

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
	// are assumed (RunRaw sets them).
	SyntaxPostgres
)

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
