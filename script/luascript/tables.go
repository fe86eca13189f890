package luascript

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// Array growth.
//
// gopher-lua keeps a table's keys 1 .. lua.MaxArrayIndex-1 in its array
// part, a slice, and only there, and a store past the end of the slice
// first fills the gap with nils (LTable.RawSet, RawSetInt): t[6e7] = 1 is
// one instruction that allocates a gigabyte and takes seconds, and rawset
// and table.insert do the same. Every store a script makes with a key it
// computes goes through chargeIndex, which charges the slots the store
// adds to the array before it happens: the index assignments the
// rewriter turns into calls of assign (rewrite.go), the computed keys of
// table constructors (constructorKey), rawset and table.insert. The host
// functions that copy a table charge its array part (copyCost).

// extentCost is what remembering a table in run.extents costs.
const extentCost = 64

// arrayIndex returns key as an index of a table's array part, if it is
// one (gopher-lua's isArrayKey).
func arrayIndex(key lua.LValue) (int, bool) {
	n, ok := key.(lua.LNumber)
	f := float64(n)
	if !ok || f < 1 || f >= float64(lua.MaxArrayIndex) || f != math.Trunc(f) {
		return 0, false
	}
	return int(f), true
}

// chargeIndex charges what storing val at index i (an array index) of t
// adds to t's array part, raising the memory error when it does not fit,
// and reports whether the store changes anything: storing nil past the
// last element does not, and the caller skips it (gopher-lua would fill
// the gap all the same).
//
// The length of the array part is not visible from outside gopher-lua;
// what is: an element found at i or i-1 (the part reaches i-1, so the
// store at most appends), the last element (MaxN: the part is at least
// that long), and run.extents, the length up to which t's part was
// charged before (it was grown to that length, and a slice keeps its
// capacity when table.remove shortens it). The slots from the longer of
// the last two to i are charged, so a store that grows nothing is not
// charged again and again (marking and unmarking t[i] in a sparse set).
func (v *vm) chargeIndex(t *lua.LTable, i int, val lua.LValue) bool {
	if i <= 1 || t.RawGetInt(i-1) != lua.LNil || t.RawGetInt(i) != lua.LNil {
		return true
	}
	r := v.run
	if r == nil {
		return true
	}
	paid := r.extents[t]
	if i <= paid {
		return true
	}
	last := t.MaxN()
	if i <= last+1 {
		return true
	}
	if val == lua.LNil {
		return false
	}
	cost := mulSize(int64(i-max(last, paid)), elemCost)
	if paid == 0 {
		cost = addSize(cost, extentCost)
	}
	v.charge(cost)
	if r.extents == nil {
		r.extents = make(map[*lua.LTable]int)
	}
	r.extents[t] = i
	return true
}

// assign is the guard of index assignments, t[k] = val (rewrite.go): the
// store the VM makes, with what it adds to an array part charged first.
func (v *vm) assign(L *lua.LState) int {
	v.store(L.Get(1), L.Get(2), L.Get(3))
	return 0
}

// store is obj[key] = val with the VM's semantics: a table without a
// metatable is stored into raw; otherwise __newindex is honoured (a
// function is called, a table is stored into in turn) by L.SetTable,
// after the table it ends up storing into raw, if any, is charged.
func (v *vm) store(obj, key, val lua.LValue) {
	L := v.L
	if t, ok := obj.(*lua.LTable); ok && t.Metatable == lua.LNil {
		if i, ok := arrayIndex(key); !ok || v.chargeIndex(t, i, val) {
			L.RawSet(t, key, val) // raises on a nil or NaN key, as the VM does
		}
		return
	}
	if t := v.rawTarget(obj, key); t != nil {
		if i, ok := arrayIndex(key); ok && !v.chargeIndex(t, i, val) {
			return
		}
	}
	L.SetTable(obj, key, val)
}

// rawTarget returns the table an assignment to obj[key] stores into raw,
// following __newindex tables as the VM does (LState.setField), or nil
// when a __newindex function takes the assignment or it fails.
func (v *vm) rawTarget(obj, key lua.LValue) *lua.LTable {
	for range lua.MaxTableGetLoop {
		t, isTable := obj.(*lua.LTable)
		if isTable && t.RawGet(key) != lua.LNil {
			return t
		}
		switch h := v.L.GetMetaField(obj, "__newindex").(type) {
		case *lua.LNilType:
			return t // nil when obj is not a table: the assignment fails
		case *lua.LFunction:
			return nil // its own stores are guarded
		default:
			obj = h
		}
	}
	return nil
}

// constructorKey is the guard of a computed key of a table constructor,
// {[k] = v}: the table is new, so an array index k may open a gap of k-1
// slots, which is charged (past maxConstIndex: the first array part
// gopher-lua allocates holds that many). It returns k.
func (v *vm) constructorKey(L *lua.LState) int {
	key := L.Get(1)
	if i, ok := arrayIndex(key); ok && i > maxConstIndex {
		v.charge(mulSize(int64(i-1), elemCost))
	}
	L.Push(key)
	return 1
}

// rawset is the base rawset(t, k, v): a lazy record is materialized
// first (lazy.go), and what the store adds to the array part is charged.
func (v *vm) rawset(L *lua.LState) int {
	t := v.plain(L.CheckTable(1))
	key, val := L.CheckAny(2), L.CheckAny(3)
	if i, ok := arrayIndex(key); ok && !v.chargeIndex(t, i, val) {
		return 0
	}
	L.RawSet(t, key, val)
	return 0
}

// tableInsert wraps table.insert(t, [pos,] v): an insertion at a
// position past the end of the array part stores there (LTable.Insert),
// which is charged like any store.
func (v *vm) tableInsert(orig lua.LGFunction) lua.LGFunction {
	return func(L *lua.LState) int {
		if L.GetTop() >= 3 {
			t, pos, val := L.CheckTable(1), L.CheckInt(2), L.CheckAny(3)
			if pos >= 1 && pos < lua.MaxArrayIndex && !v.chargeIndex(t, pos, val) {
				return 0
			}
		}
		return orig(L)
	}
}

// guardTables installs assign and constructorKey beside the guarded
// concatenation in the VM's string table, and the checked rawset and
// table.insert. It runs before the libraries are copied from the state's
// globals.
func (v *vm) guardTables(str *lua.LTable) {
	L := v.L
	str.RawSetString(assignKey, L.NewFunction(v.assign))
	str.RawSetString(keyKey, L.NewFunction(v.constructorKey))
	v.base.RawSetString("rawset", L.NewFunction(v.rawset))
	tab := L.G.Global.RawGetString(lua.TabLibName).(*lua.LTable)
	insert := tab.RawGetString("insert").(*lua.LFunction).GFunction
	tab.RawSetString("insert", L.NewFunction(v.tableInsert(insert)))
}
