package luascript

import (
	"bytes"
	"encoding/json"

	"github.com/bluesky-social/indigo/atproto/syntax"
	lua "github.com/yuin/gopher-lua"

	"github.com/lexview/lexview/script"
)

// installLinked prepares the linked library: writes into linked accounts'
// repositories through their grants' sessions.
func (v *vm) installLinked() {
	t := v.lib("linked")
	for name, f := range map[string]lua.LGFunction{
		"list": v.linkedList, "create": v.linkedCreate, "put": v.linkedPut, "delete": v.linkedDelete,
	} {
		t.RawSetString(name, v.L.NewFunction(f))
	}
}

// linked.list(): the linked accounts, {did, handle, scopes, status} each.
func (v *vm) linkedList(L *lua.LState) int {
	repos, err := v.run.inv.Host.LinkedRepos(v.run.ctx)
	if err != nil {
		v.hostErr("linked.list", err)
	}
	out := v.newArray(len(repos))
	for i, r := range repos {
		v.charge(tableCost + hashCost + 4*fieldCost + int64(len(r.DID)+len(r.Handle)+len(r.Scopes)+len(r.Status)))
		t := L.CreateTable(0, 4)
		t.RawSetString("did", lua.LString(r.DID))
		if r.Handle != "" {
			t.RawSetString("handle", lua.LString(r.Handle))
		}
		t.RawSetString("scopes", lua.LString(r.Scopes))
		t.RawSetString("status", lua.LString(r.Status))
		out.RawSetInt(i+1, t)
	}
	L.Push(out)
	return 1
}

// linked.create(repo, collection, record [, rkey]) → {uri, cid}
func (v *vm) linkedCreate(L *lua.LState) int {
	repo, collection := v.linkedTarget(L, "linked.create")
	record := v.linkedRecord(L, "linked.create", 3, collection)
	rkey := L.OptString(4, "")
	return v.linkedWrite(L, "linked.create", script.LinkedWrite{Repo: repo,
		RecordWrite: script.RecordWrite{Collection: collection, RKey: rkey, Record: record}})
}

// linked.put(repo, collection, rkey, record) → {uri, cid}
func (v *vm) linkedPut(L *lua.LState) int {
	repo, collection := v.linkedTarget(L, "linked.put")
	rkey := L.CheckString(3)
	record := v.linkedRecord(L, "linked.put", 4, collection)
	return v.linkedWrite(L, "linked.put", script.LinkedWrite{Repo: repo,
		RecordWrite: script.RecordWrite{Collection: collection, RKey: rkey, Record: record, Update: true}})
}

// linked.delete(repo, collection, rkey) → true
func (v *vm) linkedDelete(L *lua.LState) int {
	repo, collection := v.linkedTarget(L, "linked.delete")
	rkey := L.CheckString(3)
	w := script.LinkedWrite{Repo: repo, RecordWrite: script.RecordWrite{Collection: collection, RKey: rkey, Delete: true}}
	if _, err := v.run.inv.Host.WriteLinkedRecord(v.run.ctx, v.run.inv, w); err != nil {
		v.hostErr("linked.delete", err)
	}
	L.Push(lua.LTrue)
	return 1
}

// linkedTarget checks that the invocation may write and returns the
// repository (argument 1, a DID) and collection (argument 2, an NSID).
func (v *vm) linkedTarget(L *lua.LState, fn string) (repo, collection string) {
	if v.run.inv.Kind != script.KindProcedure {
		L.RaiseError("%s: records can be written only from procedure scripts", fn)
	}
	repo, collection = L.CheckString(1), L.CheckString(2)
	if _, err := syntax.ParseDID(repo); err != nil {
		L.RaiseError("%s: repo %q is not a DID", fn, repo)
	}
	if _, err := syntax.ParseNSID(collection); err != nil {
		L.RaiseError("%s: invalid collection %q", fn, collection)
	}
	return repo, collection
}

// linkedRecord encodes the record table at argument n; its $type is set
// to collection when missing and must name it otherwise.
func (v *vm) linkedRecord(L *lua.LState, fn string, n int, collection string) json.RawMessage {
	rec := v.plain(L.CheckTable(n))
	switch t := rec.RawGetString("$type"); t {
	case lua.LNil:
		v.charge(copyCost(rec))
		cp := L.CreateTable(0, 8)
		rec.ForEach(func(k, val lua.LValue) { cp.RawSet(k, val) })
		cp.RawSetString("$type", lua.LString(collection))
		rec = cp
	case lua.LString(collection):
	default:
		L.RaiseError("%s: the record's $type %s is not the collection %s", fn, lua.LVAsString(t), collection)
	}
	return json.RawMessage(bytes.Clone(v.encodeCharged(fn, rec)))
}

// linkedWrite makes w and returns {uri, cid}.
func (v *vm) linkedWrite(L *lua.LState, fn string, w script.LinkedWrite) int {
	res, err := v.run.inv.Host.WriteLinkedRecord(v.run.ctx, v.run.inv, w)
	if err != nil {
		v.hostErr(fn, err)
	}
	v.charge(tableCost + hashCost + 2*fieldCost + int64(len(res.URI)+len(res.CID)))
	out := L.CreateTable(0, 2)
	out.RawSetString("uri", lua.LString(res.URI))
	out.RawSetString("cid", lua.LString(res.CID))
	L.Push(out)
	return 1
}
