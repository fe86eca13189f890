package luascript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/bluesky-social/indigo/atproto/syntax"
	lua "github.com/yuin/gopher-lua"

	"github.com/lexview/lexview/script"
	"github.com/lexview/lexview/storage"
)

// maxLoadAll bounds Record.load_all.
const maxLoadAll = 1000

// hostErr raises a host failure as a Lua error (scripts may pcall it).
func (v *vm) hostErr(fn string, err error) {
	v.L.RaiseError("%s: %s", fn, err.Error())
}

// db.query{collection, did, limit, cursor, sort, sortDirection, filter, includeInvalid}
func (v *vm) dbQuery(L *lua.LState) int {
	q := v.recordQuery(L, "db.query")
	page, err := v.run.inv.Host.QueryRecords(v.run.ctx, q)
	if err != nil {
		v.hostErr("db.query", err)
	}
	v.charge(2*tableCost + hashCost + 2*fieldCost + int64(len(page.Cursor)) + int64(len(page.Records))*elemCost)
	out := L.CreateTable(0, 2)
	recs := v.newArray(len(page.Records))
	for i, rec := range page.Records {
		recs.RawSetInt(i+1, v.recordToLua(rec))
	}
	out.RawSetString("records", recs)
	if page.Cursor != "" {
		out.RawSetString("cursor", lua.LString(page.Cursor))
	}
	L.Push(out)
	return 1
}

// db.count{collection, did, filter, includeInvalid}
func (v *vm) dbCount(L *lua.LState) int {
	q := v.recordQuery(L, "db.count")
	n, err := v.run.inv.Host.CountMatching(v.run.ctx, q)
	if err != nil {
		v.hostErr("db.count", err)
	}
	L.Push(lua.LNumber(n))
	return 1
}

// db.search{collection, query, fields, did, limit, cursor, includeInvalid}: a page of
// records found by full-text search over the collection's text indexes,
// best first, as db.query returns records.
func (v *vm) dbSearch(L *lua.LState) int {
	q := v.searchQuery(L)
	page, err := v.run.inv.Host.SearchRecords(v.run.ctx, q)
	if err != nil {
		v.hostErr("db.search", err)
	}
	v.charge(2*tableCost + hashCost + 2*fieldCost + int64(len(page.Cursor)) + int64(len(page.Hits))*elemCost)
	out := L.CreateTable(0, 2)
	recs := v.newArray(len(page.Hits))
	for i, h := range page.Hits {
		recs.RawSetInt(i+1, v.recordToLua(h.Record))
	}
	out.RawSetString("records", recs)
	if page.Cursor != "" {
		out.RawSetString("cursor", lua.LString(page.Cursor))
	}
	L.Push(out)
	return 1
}

// searchQuery reads the options table of db.search.
func (v *vm) searchQuery(L *lua.LState) storage.SearchQuery {
	const fn = "db.search"
	opts := v.plain(L.OptTable(1, L.CreateTable(0, 0)))
	q := storage.SearchQuery{
		Collection: optString(L, opts, "collection", v.run.inv.Collection),
		Query:      optString(L, opts, "query", ""),
		DID:        optString(L, opts, "did", ""),
		Cursor:     optString(L, opts, "cursor", ""),
		Limit:      optLimit(L, opts, fn),
	}
	if q.Collection == "" {
		L.RaiseError("%s: collection is required (the lexicon has no target_collection)", fn)
	}
	if _, err := syntax.ParseNSID(q.Collection); err != nil {
		L.RaiseError("%s: invalid collection %q", fn, q.Collection)
	}
	if q.Query == "" {
		L.RaiseError("%s: query is required", fn)
	}
	q.ExcludeInvalid = v.excludeInvalid(L, opts, fn, q.Collection)
	switch f := opts.RawGetString("fields").(type) {
	case *lua.LNilType:
	case lua.LString:
		q.Fields = []string{string(f)}
	case *lua.LTable:
		v.plain(f)
		n := f.Len()
		if n > storage.MaxTextIndexes {
			L.RaiseError("%s: fields lists at most %d paths", fn, storage.MaxTextIndexes)
		}
		for i := 1; i <= n; i++ {
			p, ok := f.RawGetInt(i).(lua.LString)
			if !ok {
				L.RaiseError("%s: fields must be a list of field paths", fn)
			}
			q.Fields = append(q.Fields, string(p))
		}
	default:
		L.RaiseError("%s: fields must be a list of field paths", fn)
	}
	return q
}

// optLimit reads the limit option of a listing: 1 to 100, 20 when absent.
func optLimit(L *lua.LState, opts *lua.LTable, fn string) int {
	switch lim := opts.RawGetString("limit").(type) {
	case *lua.LNilType:
		return 20
	case lua.LNumber:
		if lim < 1 || lim > 100 || lim != lua.LNumber(int(lim)) {
			L.RaiseError("%s: limit must be an integer between 1 and 100", fn)
		}
		return int(lim)
	default:
		L.RaiseError("%s: limit must be a number", fn)
	}
	return 0
}

// recordQuery reads the options table of db.query and db.count.
func (v *vm) recordQuery(L *lua.LState, fn string) storage.RecordQuery {
	opts := v.plain(L.OptTable(1, L.CreateTable(0, 0)))
	q := storage.RecordQuery{
		Collection: optString(L, opts, "collection", v.run.inv.Collection),
		DID:        optString(L, opts, "did", ""),
		Cursor:     optString(L, opts, "cursor", ""),
		Sort:       optString(L, opts, "sort", ""),
	}
	if q.Collection == "" {
		L.RaiseError("%s: collection is required (the lexicon has no target_collection)", fn)
	}
	if q.Collection != v.validNSID { // a script's queries mostly name one collection
		if _, err := syntax.ParseNSID(q.Collection); err != nil {
			L.RaiseError("%s: invalid collection %q", fn, q.Collection)
		}
		v.validNSID = q.Collection
	}
	switch dir := strings.ToLower(optString(L, opts, "sortDirection", "desc")); dir {
	case "asc":
		q.Ascending = true
	case "desc":
	default:
		L.RaiseError("%s: sortDirection must be \"asc\" or \"desc\"", fn)
	}
	q.Limit = optLimit(L, opts, fn)
	q.ExcludeInvalid = v.excludeInvalid(L, opts, fn, q.Collection)
	if f := opts.RawGetString("filter"); f != lua.LNil {
		filter, err := v.parseFilter(f, 1)
		if err != nil {
			L.RaiseError("%s: filter: %s", fn, err.Error())
		}
		q.Filter = &filter
	}
	if l := opts.RawGetString("labels"); l != lua.LNil {
		labels, err := v.parseLabelConditions(l)
		if err != nil {
			L.RaiseError("%s: labels: %s", fn, err.Error())
		}
		q.Labels = labels
	}
	return q
}

// excludeInvalid reads the includeInvalid option of a query of
// collection: whether its records stored with a validation error are left
// out. Absent, they are when the collection hides them (the validation
// mode hide, script.InvalidHider).
func (v *vm) excludeInvalid(L *lua.LState, opts *lua.LTable, fn, collection string) bool {
	switch x := opts.RawGetString("includeInvalid").(type) {
	case *lua.LNilType:
		return v.hidesInvalid(collection)
	case lua.LBool:
		return !bool(x)
	default:
		L.RaiseError("%s: includeInvalid must be a boolean", fn)
	}
	return false
}

// hidesInvalid reports whether the host hides collection's flagged
// records by default.
func (v *vm) hidesInvalid(collection string) bool {
	h, ok := v.run.inv.Host.(script.InvalidHider)
	return ok && h.HidesInvalid(collection)
}

func optString(L *lua.LState, t *lua.LTable, key, def string) string {
	switch x := t.RawGetString(key).(type) {
	case *lua.LNilType:
		return def
	case lua.LString:
		return string(x)
	default:
		L.RaiseError("%s must be a string", key)
	}
	return def
}

// parseFilter converts a Lua filter: a leaf {field=, op=, value=}, a group
// {AND = {...}} / {OR = {...}}, or a list of conditions (an implicit AND).
func (v *vm) parseFilter(val lua.LValue, depth int) (storage.Filter, error) {
	t, ok := val.(*lua.LTable)
	if !ok {
		return storage.Filter{}, errors.New("a condition must be a table")
	}
	v.plain(t)
	if depth > storage.MaxFilterDepth {
		return storage.Filter{}, fmt.Errorf("nested deeper than %d levels", storage.MaxFilterDepth)
	}
	group := func(list lua.LValue) ([]storage.Filter, error) {
		lt, ok := list.(*lua.LTable)
		if !ok || lt.Len() == 0 {
			return nil, errors.New("AND and OR take a non-empty list of conditions")
		}
		out := make([]storage.Filter, 0, min(lt.Len(), storage.MaxFilterConditions))
		for i := 1; i <= lt.Len(); i++ {
			f, err := v.parseFilter(lt.RawGetInt(i), depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, f)
		}
		return out, nil
	}
	for _, k := range []string{"AND", "and"} {
		if list := t.RawGetString(k); list != lua.LNil {
			and, err := group(list)
			return storage.Filter{And: and}, err
		}
	}
	for _, k := range []string{"OR", "or"} {
		if list := t.RawGetString(k); list != lua.LNil {
			or, err := group(list)
			return storage.Filter{Or: or}, err
		}
	}
	if t.RawGetString("field") == lua.LNil && t.Len() > 0 {
		and, err := group(t)
		return storage.Filter{And: and}, err
	}
	field, ok := t.RawGetString("field").(lua.LString)
	if !ok || field == "" {
		return storage.Filter{}, errors.New("a condition needs a field")
	}
	op := "="
	if o, ok := t.RawGetString("op").(lua.LString); ok {
		op = strings.ToUpper(strings.TrimSpace(string(o)))
	}
	f := storage.Filter{Field: string(field), Op: op}
	switch x := t.RawGetString("value").(type) {
	case *lua.LNilType:
		f.Value = nil
	case lua.LString:
		f.Value = string(x)
	case lua.LNumber:
		f.Value = float64(x)
	case lua.LBool:
		f.Value = bool(x)
	case *lua.LUserData:
		if x != v.null {
			return f, errors.New("unsupported value")
		}
	default:
		return f, fmt.Errorf("a value must be a string, number, boolean or nil, not %s", x.Type().String())
	}
	return f, nil
}

// db.get(at_uri[, {includeInvalid}]): one record or nil.
func (v *vm) dbGet(L *lua.LState) int {
	uri := L.CheckString(1)
	if u, err := syntax.ParseATURI(uri); err != nil || u.RecordKey() == "" {
		L.RaiseError("db.get: a full AT URI (at://did/collection/rkey) is required, got %q", uri)
	}
	rec, err := v.run.inv.Host.GetRecord(v.run.ctx, uri)
	if errors.Is(err, storage.ErrNotFound) {
		L.Push(lua.LNil)
		return 1
	}
	if err != nil {
		v.hostErr("db.get", err)
	}
	if rec.Invalid != "" {
		opts := v.plain(L.OptTable(2, L.CreateTable(0, 0)))
		if v.excludeInvalid(L, opts, "db.get", rec.Collection) {
			L.Push(lua.LNil)
			return 1
		}
	}
	L.Push(v.recordToLua(rec))
	return 1
}

// db.raw(sql, params): rows as tables keyed by column, and the number of
// affected rows for writes.
func (v *vm) dbRaw(L *lua.LState) int {
	query := L.CheckString(1)
	var args []any
	if pt := L.OptTable(2, nil); pt != nil {
		for i := 1; i <= pt.Len(); i++ {
			switch x := pt.RawGetInt(i).(type) {
			case lua.LString:
				args = append(args, string(x))
			case lua.LNumber:
				if x == lua.LNumber(int64(x)) {
					args = append(args, int64(x))
				} else {
					args = append(args, float64(x))
				}
			case lua.LBool:
				args = append(args, bool(x))
			case *lua.LNilType:
				args = append(args, nil)
			default:
				L.RaiseError("db.raw: parameter %d must be a string, number, boolean or nil", i)
			}
		}
	}
	// The storage stops reading once the rows pass the memory left (it
	// counts less than the Lua values cost, so a result it returns may
	// still not fit, below).
	res, err := v.run.inv.Host.RawQuery(v.run.ctx, query, args, v.e.limits.MaxRawRows, max(v.run.mem.left(), 1))
	if errors.Is(err, storage.ErrRawTooLarge) {
		v.run.mem.hit = true
		v.hostErr("db.raw", fmt.Errorf("%w: %w", v.memoryErr(), err))
	}
	if err != nil {
		v.hostErr("db.raw", err)
	}
	// The rows are charged before they become Lua values, and any value
	// longer than a string may be is refused.
	size := int64(tableCost)
	for _, row := range res.Rows {
		size = addSize(size, elemCost+tableCost+hashCost)
		for c := range min(len(row), len(res.Columns)) {
			n := rawValueSize(row[c])
			v.checkString(n - stringCost)
			size = addSize(size, fieldCost+n)
		}
	}
	v.charge(size)
	rows := v.newArray(len(res.Rows))
	for i, row := range res.Rows {
		t := L.CreateTable(0, len(res.Columns))
		for c, col := range res.Columns {
			if c < len(row) {
				t.RawSetString(col, goToLua(row[c]))
			}
		}
		rows.RawSetInt(i+1, t)
	}
	L.Push(rows)
	L.Push(lua.LNumber(res.Affected))
	return 2
}

// rawValueSize is what a db.raw value costs as a Lua value (goToLua).
func rawValueSize(x any) int64 {
	switch x := x.(type) {
	case nil:
		return 0
	case string:
		return stringCost + int64(len(x))
	case []byte:
		return stringCost + int64(len(x))
	case int64, float64, bool:
		return valueCost
	}
	return stringCost + 64 // fmt.Sprint of something else
}

func goToLua(x any) lua.LValue {
	switch x := x.(type) {
	case nil:
		return lua.LNil
	case string:
		return lua.LString(x)
	case []byte:
		return lua.LString(x)
	case int64:
		return lua.LNumber(x)
	case float64:
		return lua.LNumber(x)
	case bool:
		return lua.LBool(x)
	}
	return lua.LString(fmt.Sprint(x))
}

// Record.load_all(uris[, {includeInvalid}]): the records in order, nil
// where not indexed or hidden (a record stored with a validation error of
// a collection that hides them, unless includeInvalid).
// The lookups run concurrently in chunks.
func (v *vm) recordLoadAll(L *lua.LState) int {
	list := L.CheckTable(1)
	n := list.Len()
	if n > maxLoadAll {
		L.RaiseError("Record.load_all: at most %d URIs", maxLoadAll)
	}
	v.charge(tableCost + int64(n)*elemCost)
	uris := make([]string, n)
	for i := range uris {
		s, ok := list.RawGetInt(i + 1).(lua.LString)
		if !ok {
			L.RaiseError("Record.load_all: entry %d is not a string", i+1)
		}
		uris[i] = string(s)
	}
	found, err := v.loadParallel(uris)
	if err != nil {
		v.hostErr("Record.load_all", err)
	}
	opts := v.plain(L.OptTable(2, L.CreateTable(0, 0)))
	out := v.newArray(n)
	for i, uri := range uris {
		if rec, ok := found[uri]; ok && (rec.Invalid == "" || !v.excludeInvalid(L, opts, "Record.load_all", rec.Collection)) {
			out.RawSetInt(i+1, v.recordToLua(rec))
		} else {
			out.RawSetInt(i+1, lua.LNil)
		}
	}
	L.Push(out)
	return 1
}

// loadChunk is how many URIs one concurrent lookup takes.
const loadChunk = 50

func (v *vm) loadParallel(uris []string) (map[string]storage.Record, error) {
	host, ctx := v.run.inv.Host, v.run.ctx
	if len(uris) <= loadChunk {
		return host.GetRecords(ctx, uris)
	}
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		firstErr error
	)
	all := make(map[string]storage.Record, len(uris))
	for start := 0; start < len(uris); start += loadChunk {
		chunk := uris[start:min(start+loadChunk, len(uris))]
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := host.GetRecords(ctx, chunk)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			for k, r := range got {
				all[k] = r
			}
		}()
	}
	wg.Wait()
	return all, firstErr
}

// installRecord prepares Record(collection, fields [, rkey]) and the
// methods of Record objects.
func (v *vm) installRecord() {
	L := v.L
	methods := L.NewTable()
	methods.RawSetString("save", L.NewFunction(v.recordSave))
	methods.RawSetString("delete", L.NewFunction(v.recordDelete))
	v.recordMT = L.NewTable()
	v.recordMT.RawSetString("__index", methods)
	v.recordMT.RawSetString("__metatable", lua.LFalse)
	v.recordClass = L.NewTable()
	v.recordClass.RawSetString("__call", L.NewFunction(v.recordNew))
	v.recordClass.RawSetString("__metatable", lua.LFalse)
}

// recordNew is Record(collection, fields [, rkey]).
func (v *vm) recordNew(L *lua.LState) int {
	// Argument 1 is the Record table itself (__call).
	collection := L.CheckString(2)
	if _, err := syntax.ParseNSID(collection); err != nil {
		L.RaiseError("Record: invalid collection %q", collection)
	}
	fields := v.plain(L.OptTable(3, L.CreateTable(0, 0)))
	v.charge(copyCost(fields))
	obj := L.CreateTable(0, 4)
	fields.ForEach(func(k, val lua.LValue) { obj.RawSet(k, val) })
	obj.RawSetString("$type", lua.LString(collection))
	if rkey := L.OptString(4, ""); rkey != "" {
		if v.run.rkeys == nil {
			v.run.rkeys = map[*lua.LTable]string{}
		}
		v.run.rkeys[obj] = rkey
	}
	obj.Metatable = v.recordMT
	L.Push(obj)
	return 1
}

// copyCost is what a copy of table t's entries costs: the copy's array
// part reaches t's last element, gaps included (tables.go).
func copyCost(t *lua.LTable) int64 {
	return addSize(tableCost+hashCost+int64(countKeys(t)+1)*fieldCost, mulSize(int64(t.MaxN()), elemCost))
}

// recordTarget returns the collection and rkey a Record object writes to.
// A record whose uri names another repository cannot be written: writes go
// to the caller's own repository.
func (v *vm) recordTarget(L *lua.LState, obj *lua.LTable, callerDID string) (collection, rkey string, exists bool) {
	v.plain(obj)
	collection = lua.LVAsString(obj.RawGetString("$type"))
	if uri, ok := obj.RawGetString("uri").(lua.LString); ok && uri != "" {
		u, err := syntax.ParseATURI(string(uri))
		if err != nil || u.RecordKey() == "" {
			L.RaiseError("record uri %q is not a record AT URI", string(uri))
		}
		if u.Authority().String() != callerDID {
			L.RaiseError("record %s is not in the caller's repository (%s)", string(uri), callerDID)
		}
		return u.Collection().String(), u.RecordKey().String(), true
	}
	if rk, ok := v.run.rkeys[obj]; ok {
		return collection, rk, false
	}
	return collection, "", false
}

// writer checks that the invocation may write and returns its caller.
func (v *vm) writer(L *lua.LState, what string) *script.Caller {
	inv := v.run.inv
	if inv.Kind != script.KindProcedure {
		L.RaiseError("%s: records can be written only from procedure scripts", what)
	}
	if inv.Caller == nil || inv.Caller.SessionID == "" {
		L.RaiseError("%s: the caller has no PDS session to write with", what)
	}
	return inv.Caller
}

// record:save(): createRecord, or putRecord when the object has a uri (or
// an rkey was given). Sets uri and cid; returns the object.
func (v *vm) recordSave(L *lua.LState) int {
	obj := v.plain(L.CheckTable(1))
	caller := v.writer(L, "record:save")
	collection, rkey, exists := v.recordTarget(L, obj, caller.DID)
	v.charge(copyCost(obj))
	body := L.CreateTable(0, 8)
	obj.ForEach(func(k, val lua.LValue) {
		if ks, ok := k.(lua.LString); ok && (ks == "uri" || ks == "cid") {
			return
		}
		body.RawSet(k, val)
	})
	raw := bytes.Clone(v.encodeCharged("record:save", body))
	res, err := v.run.inv.Host.WriteRecord(v.run.ctx, caller, script.RecordWrite{
		Collection: collection, RKey: rkey, Record: json.RawMessage(raw), Update: exists || rkey != "",
	})
	if err != nil {
		v.hostErr("record:save", err)
	}
	obj.RawSetString("uri", lua.LString(res.URI))
	obj.RawSetString("cid", lua.LString(res.CID))
	L.Push(obj)
	return 1
}

// record:delete(): deleteRecord of the object's uri.
func (v *vm) recordDelete(L *lua.LState) int {
	obj := L.CheckTable(1)
	caller := v.writer(L, "record:delete")
	collection, rkey, _ := v.recordTarget(L, obj, caller.DID)
	if rkey == "" {
		L.RaiseError("record:delete: the record has no uri")
	}
	if _, err := v.run.inv.Host.WriteRecord(v.run.ctx, caller, script.RecordWrite{Delete: true, Collection: collection, RKey: rkey}); err != nil {
		v.hostErr("record:delete", err)
	}
	return 0
}
