package luascript

import (
	"encoding/json"
	"errors"

	lua "github.com/yuin/gopher-lua"

	"github.com/lexview/lexview/storage"
)

// Lazy records.
//
// A record that crosses into Lua (db.query, db.get, Record.load_all)
// starts as an empty table whose metatable is the VM's shared lazy
// metatable; its uri, cid and stored JSON wait in run.lazy (an empty
// table costs one allocation, a table with two fields a hash map too).
// Reading uri or cid answers from there (__index). Any other read, any
// write (__index, __newindex), and every operation that looks at a
// table's raw contents (pairs, next, rawget, rawset, setmetatable, os.time
// and the host functions that read tables), materializes the table: the
// JSON is decoded into it with uri and cid and the metatable dropped,
// leaving exactly the table the eager conversion builds, in the same
// iteration order. A record that leaves the script untouched is encoded
// by splicing its stored JSON (encoder.splice), never decoded.
//
// While lazy, a table admits only the raw changes that need no metamethod:
// the array operations of the table library (table.insert and friends).
// materialize keeps them.
// getmetatable answers nil for a lazy record, as for a plain table, so the
// shared metatable never reaches a script.

// maxLazyBytes bounds the stored JSON one run keeps for lazy records. The
// lazy map holds each record until it is materialized or the run ends,
// even after the script has dropped it; past this bound records are
// decoded at once, so a script that pages through many records cannot
// make the run hold them all.
const maxLazyBytes = 32 << 20

// maxPooledLazy is the largest lazy map a pooled VM keeps for its next run.
const maxPooledLazy = 4096

// installLazy creates the shared lazy metatable and replaces the base
// functions that must see a lazy record's fields. It runs after base is
// filled with gopher-lua's originals and before the libraries are copied
// from the state's globals.
func (v *vm) installLazy() {
	L := v.L
	v.lazyMT = L.CreateTable(0, 3)
	v.lazyMT.RawSetString("__index", L.NewFunction(v.lazyIndex))
	v.lazyMT.RawSetString("__newindex", L.NewFunction(v.lazyNewIndex))
	// A backstop: getmetatable answers nil for lazy records, and nothing
	// else hands a metatable to a script.
	v.lazyMT.RawSetString("__metatable", lua.LFalse)

	g := L.G.Global
	orig := func(name string) lua.LGFunction { return g.RawGetString(name).(*lua.LFunction).GFunction }
	// plainFirst wraps a function so that its first n table arguments are
	// materialized before it runs.
	plainFirst := func(n int, f lua.LGFunction) *lua.LFunction {
		return L.NewFunction(func(L *lua.LState) int {
			for i := 1; i <= n; i++ {
				if t, ok := L.Get(i).(*lua.LTable); ok {
					v.plain(t)
				}
			}
			return f(L)
		})
	}
	next := orig("next")
	getmt := orig("getmetatable")
	v.base.RawSetString("next", plainFirst(1, next))
	v.base.RawSetString("rawget", plainFirst(1, orig("rawget")))
	// rawset materializes too (tables.go).
	// A lazy record used as a metatable would hide its fields from the
	// metamethod lookups, which are raw.
	v.base.RawSetString("setmetatable", plainFirst(2, orig("setmetatable")))
	v.base.RawSetString("getmetatable", L.NewFunction(func(L *lua.LState) int {
		if t, ok := L.Get(1).(*lua.LTable); ok && v.isLazy(t) {
			L.Push(lua.LNil)
			return 1
		}
		return getmt(L)
	}))
	// pairs returns its own iterator: gopher-lua's is reachable by scripts
	// (local it = pairs({})) and would iterate a lazy record raw.
	iter := L.NewFunction(func(L *lua.LState) int {
		t := v.plain(L.CheckTable(1))
		key, val := t.Next(L.Get(2))
		if key == lua.LNil {
			return 0
		}
		L.Push(key)
		L.Push(val)
		return 2
	})
	v.base.RawSetString("pairs", L.NewFunction(func(L *lua.LState) int {
		t := v.plain(L.CheckTable(1))
		L.Push(iter)
		L.Push(t)
		L.Push(lua.LNil)
		return 3
	}))
	// os.time reads the fields of its table argument raw.
	osLib := g.RawGetString(lua.OsLibName).(*lua.LTable)
	osLib.RawSetString("time", plainFirst(1, osLib.RawGetString("time").(*lua.LFunction).GFunction))
}

// lazyRecord is what a lazy record's table stands for.
type lazyRecord struct {
	uri, cid string
	raw      json.RawMessage
}

// isLazy reports whether t is a record not materialized yet.
func (v *vm) isLazy(t *lua.LTable) bool {
	mt, ok := t.Metatable.(*lua.LTable)
	return ok && mt == v.lazyMT
}

// plain materializes t if it is a lazy record and returns it: host code
// that reads a table raw (RawGet, ForEach, Next) calls it first.
func (v *vm) plain(t *lua.LTable) *lua.LTable {
	if t != nil && v.isLazy(t) {
		v.materialize(t)
	}
	return t
}

// lazyIndex is the lazy metatable's __index: uri and cid from the lazy
// entry, anything else from the materialized table.
func (v *vm) lazyIndex(L *lua.LState) int {
	t := L.CheckTable(1)
	if key, ok := L.Get(2).(lua.LString); ok && (key == "uri" || key == "cid") && v.run != nil {
		if rec, lazy := v.run.lazy[t]; lazy {
			if key == "uri" {
				L.Push(lua.LString(rec.uri))
			} else {
				L.Push(lua.LString(rec.cid))
			}
			return 1
		}
	}
	v.plain(t)
	L.Push(L.GetTable(t, L.Get(2)))
	return 1
}

// lazyNewIndex is the lazy metatable's __newindex: materialize, then
// assign (with the checks of an ordinary assignment, tables.go).
func (v *vm) lazyNewIndex(L *lua.LState) int {
	t := L.CheckTable(1)
	v.plain(t)
	v.store(t, L.Get(2), L.Get(3))
	return 0
}

// recordToLua converts an indexed record into {uri, cid, ...fields},
// lazily when it can (see the top of this file). The record is charged
// to the run as it arrives (recordCost), its fields when they are
// decoded.
func (v *vm) recordToLua(rec storage.Record) lua.LValue {
	v.charge(recordCost(rec))
	r := v.run
	if v.e.eagerRecords || r == nil || !isJSONObject(rec.Value) || r.lazyBytes+len(rec.Value) > maxLazyBytes {
		return v.recordToLuaEager(rec)
	}
	t := v.L.CreateTable(0, 0)
	t.Metatable = v.lazyMT
	if r.lazy == nil {
		r.lazy, v.spareLazy = v.spareLazy, nil
		if r.lazy == nil {
			r.lazy = make(map[*lua.LTable]lazyRecord, 32)
		}
	}
	r.lazy[t] = lazyRecord{uri: rec.URI, cid: rec.CID, raw: rec.Value}
	r.lazyBytes += len(rec.Value)
	return t
}

// recordCost is what a record costs before its JSON is decoded: a table
// with uri and cid, and the stored JSON.
func recordCost(rec storage.Record) int64 {
	return tableCost + hashCost + 2*(fieldCost+stringCost) + int64(len(rec.URI)+len(rec.CID)+len(rec.Value))
}

// recordToLuaEager decodes the record at once: the stored JSON's fields,
// then uri and cid, which win over fields of the same names.
func (v *vm) recordToLuaEager(rec storage.Record) lua.LValue {
	val, err := v.fromJSON(rec.Value)
	if errors.Is(err, errMemory) {
		v.raise(err)
	}
	t, ok := val.(*lua.LTable)
	if err != nil || !ok {
		t = v.L.CreateTable(0, 2)
	}
	t.RawSetString("uri", lua.LString(rec.URI))
	t.RawSetString("cid", lua.LString(rec.CID))
	return t
}

// materialize decodes a lazy record's JSON into it and drops the lazy
// metatable. The result is the table recordToLuaEager builds with the
// script's raw changes replayed on it: uri and cid, then any other
// entries (array entries from table.insert), in their order.
func (v *vm) materialize(t *lua.LTable) {
	r := v.run
	if r == nil {
		t.Metatable = lua.LNil
		return
	}
	rec, ok := r.lazy[t]
	if !ok {
		t.Metatable = lua.LNil
		return
	}
	// Decode first: a record whose fields do not fit the memory budget
	// stays lazy and whole (the error may be caught).
	fresh, ok, err := v.decodeObject(rec.raw)
	if err != nil {
		v.raise(err)
	}
	t.Metatable = lua.LNil
	delete(r.lazy, t)
	r.lazyBytes -= len(rec.raw)
	if !ok {
		// As recordToLuaEager: a record that is not valid JSON has only
		// uri and cid.
		fresh = v.L.CreateTable(0, 2)
	}
	fresh.RawSetString("uri", lua.LString(rec.uri))
	fresh.RawSetString("cid", lua.LString(rec.cid))
	for k, val := t.Next(lua.LNil); k != lua.LNil; k, val = t.Next(k) {
		fresh.RawSet(k, val)
	}
	*t = *fresh // t keeps its identity and takes fresh's contents
}

// releaseLazy ends the run's use of its lazy map, keeping a small one for
// the VM's next run.
func (v *vm) releaseLazy(r *run) {
	if r == nil {
		return
	}
	r.rkeys = nil
	if r.lazy == nil {
		return
	}
	if len(r.lazy) <= maxPooledLazy {
		clear(r.lazy)
		v.spareLazy = r.lazy
	}
	r.lazy = nil
}

// isJSONObject reports whether raw starts (after whitespace) with '{'.
func isJSONObject(raw []byte) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
		case '{':
			return true
		default:
			return false
		}
	}
	return false
}
