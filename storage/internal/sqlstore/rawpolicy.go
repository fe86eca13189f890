package sqlstore

import (
	"fmt"
	"strings"

	"github.com/lexview/lexview/storage"
)

// The allow-list of scripts' raw SQL (db.raw). It is enforced twice: by
// guardRaw, on the statement's text, and by the database itself while the
// statement runs (Dialect.RunRaw: an authorizer on SQLite, a role with
// grants on these relations only on PostgreSQL). Whatever is not listed
// here is refused; a table added to the schema later is refused until it
// is added. docs/lua.md documents the list.

// RawWriteTable is the one table a raw write may change.
const RawWriteTable = "records"

// rawTriggerTables are the tables that triggers on the records table keep
// (the link index and its counts; the field indexes, whose triggers read field_indexes
// and write field_index_values; full-text search, whose triggers read
// search_fields and the view search_text and write search_docs and the
// FTS4 table search_fts, whose own statements write its shadow tables on
// the same connection): a raw write that changes records changes them
// through those triggers, so the database's enforcement lets a write
// reach them (SQLite's authorizer cannot tell a trigger's action from the
// statement's own: go-sqlite3 does not pass the trigger's name), while the
// statement itself may not name them (schemaTables).
var rawTriggerTables = setOf("record_links", "link_targets", "field_indexes", "field_index_values",
	"search_fields", "search_docs", "search_text", "search_fts", "search_fts_content", "search_fts_segments",
	"search_fts_segdir", "search_fts_docsize", "search_fts_stat")

// RawTriggerTable reports whether a raw write may reach table through the
// triggers on the records table.
func RawTriggerTable(table string) bool { return rawTriggerTables[strings.ToLower(table)] }

// RawRelations are the relations a raw statement may read: the records
// table, the record tombstones and the documented views.
var RawRelations = []string{"records", "record_tombstones", "lexicon_info"}

var rawRelations = setOf(RawRelations...)

// rawViewColumns are the base-table columns the documented views read. The
// SQLite authorizer sees a view's base tables, not the view, so these
// columns, and no others of those tables, are readable at the database
// level. On PostgreSQL the role reads the view only.
var rawViewColumns = map[string]map[string]bool{
	// lexicon_info: every column of lexicons but the script, the index
	// hook and the lexicon document.
	"lexicons": setOf("id", "lexicon_type", "target_collection", "revision", "backfill", "created_at", "updated_at"),
}

// rawTableFunctions are the set-returning functions a statement may name
// as a FROM item (json_each on SQLite, unnest or jsonb_array_elements on
// PostgreSQL, ...). They read only their arguments.
var rawTableFunctions = setOf(
	// SQLite
	"json_each", "json_tree", "jsonb_each", "jsonb_tree",
	// PostgreSQL
	"jsonb_each_text", "json_each_text", "jsonb_array_elements", "jsonb_array_elements_text",
	"json_array_elements", "json_array_elements_text", "jsonb_object_keys", "json_object_keys",
	"jsonb_path_query", "jsonb_to_recordset", "json_to_recordset", "jsonb_populate_recordset",
	"unnest", "generate_series", "generate_subscripts", "regexp_matches", "regexp_split_to_table",
	"string_to_table",
)

// sqliteTableFunctions are SQLite's table functions among
// rawTableFunctions, which its authorizer sees as tables.
var sqliteTableFunctions = setOf("json_each", "json_tree", "jsonb_each", "jsonb_tree")

// rawSQLiteFunctions are the SQLite functions a raw statement may call:
// the core scalar, date, JSON, math, aggregate and window functions. The
// SQLite authorizer refuses every other one (load_extension, sqlite_*,
// changes(), functions of extensions, ...). "->" and "->>" are the JSON
// operators.
var rawSQLiteFunctions = setOf(
	"abs", "char", "coalesce", "concat", "concat_ws", "format", "glob", "hex", "if", "ifnull", "iif", "instr",
	"length", "like", "likelihood", "likely", "lower", "ltrim", "max", "min", "nullif", "octet_length", "printf",
	"quote", "random", "randomblob", "replace", "round", "rtrim", "sign", "substr", "substring", "trim",
	"typeof", "unhex", "unicode", "unistr", "unistr_quote", "unlikely", "upper",
	"date", "time", "datetime", "julianday", "unixepoch", "strftime", "timediff",
	"current_date", "current_time", "current_timestamp",
	"json", "jsonb", "json_array", "jsonb_array", "json_array_length", "json_error_position", "json_extract",
	"jsonb_extract", "json_insert", "jsonb_insert", "json_object", "jsonb_object", "json_patch", "jsonb_patch",
	"json_pretty", "json_remove", "jsonb_remove", "json_replace", "jsonb_replace", "json_set", "jsonb_set",
	"json_type", "json_valid", "json_quote", "json_group_array", "jsonb_group_array", "json_group_object",
	"jsonb_group_object", "->", "->>",
	"acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "ceil", "ceiling", "cos", "cosh", "degrees",
	"exp", "floor", "ln", "log", "log10", "log2", "mod", "pi", "pow", "power", "radians", "sin", "sinh",
	"sqrt", "tan", "tanh", "trunc",
	"avg", "count", "group_concat", "string_agg", "sum", "total",
	"row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead", "first_value",
	"last_value", "nth_value",
)

// schemaTables are the tables of the schema a statement may not read.
// The allow-list refuses them anyway; naming them here refuses them
// anywhere in a statement, with a clearer error.
var schemaTables = setOf(
	"admin_users", "admin_api_keys", "api_clients", "client_auth_keys", "device_sessions", "dpop_provisions",
	"event_log", "settings", "setting_blobs", "scripts", "script_variables", "lexicons", "stream_cursors",
	"backfill_jobs", "backfill_repos", "dead_letters", "script_retries", "schema_migrations", "script_sql_role",
	"repo_states", "account_states", "record_links", "link_targets", "link_index_state", "field_indexes", "field_index_values",
	"search_fields", "search_docs", "search_fts", "search_fts_content", "search_fts_segments", "search_fts_segdir",
	"search_fts_docsize", "search_fts_stat", "search_text", "search_live",
)

// deniedNames are catalogs and functions that reach files, the network,
// server state or configuration, or run SQL given as a string. The
// database enforcement refuses them too (the SQLite authorizer through its
// own allow-list of functions; on PostgreSQL the role lacks the
// privileges most of them need), but set_config and the functions running
// SQL from a string are refused only here: see docs/lua.md.
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
	"inet_server_port", "inet_client_addr", "inet_client_port", "nextval", "setval", "currval", "lastval",
	"current_database", "current_catalog", "current_schema", "current_schemas", "current_user",
	"current_role", "session_user", "has_table_privilege", "has_column_privilege", "has_schema_privilege",
	"has_function_privilege", "has_database_privilege", "txid_current_snapshot",
)

// deniedPrefixes cover families of catalogs and functions.
var deniedPrefixes = []string{"sqlite_", "pragma_", "pg_", "dblink", "binary_upgrade", "to_reg", "crosstab", "lo_"}

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// RawReadable reports whether a raw statement may read column of table,
// as the SQLite authorizer reports them (column "" when a statement reads
// no column, as in COUNT(*); "ROWID" for the row id).
func RawReadable(table, column string) bool {
	table, column = strings.ToLower(table), strings.ToLower(column)
	switch {
	case rawRelations[table], sqliteTableFunctions[table]:
		return true
	case rawViewColumns[table] != nil:
		return column == "" || rawViewColumns[table][column]
	}
	return false
}

// RawSQLiteFunction reports whether a raw statement may call the SQLite
// function name.
func RawSQLiteFunction(name string) bool { return rawSQLiteFunctions[strings.ToLower(name)] }

// RawRefused is the error of a raw statement the allow-list refuses: it
// wraps storage.ErrInvalidQuery and says why.
func RawRefused(format string, a ...any) error {
	return fmt.Errorf("%w: raw SQL refused: %s", storage.ErrInvalidQuery, fmt.Sprintf(format, a...))
}

// refusal explains why a name may not appear in a raw statement, or is "".
func refusal(name string) string {
	switch {
	case schemaTables[name]:
		return fmt.Sprintf("table %s is not readable by scripts (%s)", name, readableList())
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

func readableList() string {
	return "scripts may read " + strings.Join(RawRelations, ", ")
}
