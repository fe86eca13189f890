package sqlstore

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/lexview/lexview/storage"
)

// maxRawSQL bounds the length of a raw statement.
const maxRawSQL = 64 << 10

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
