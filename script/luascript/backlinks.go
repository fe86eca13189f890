package luascript

import (
	lua "github.com/yuin/gopher-lua"

	"github.com/lexview/lexview/storage"
)

// db.backlinks{subject, source, did, limit, cursor}: the records linking
// to subject from source (storage.LinkSource's "collection:path"),
// newest first, as {records = {{uri, did, collection, rkey}, ...},
// total = n, cursor = c}; cursor is nil on the last page. did is a DID or
// a list of them and keeps only their records; limit is 1 to 100
// (default 16).
func (v *vm) dbBacklinks(L *lua.LState) int {
	const fn = "db.backlinks"
	opts := v.backlinkOptions(L, fn, "subject", "source", "did", "limit", "cursor")
	subject, source := subjectAndSource(L, fn, opts)
	q := storage.BacklinkQuery{Subject: subject, Source: source, Cursor: optStringOf(L, fn, opts, "cursor")}
	q.DIDs = didList(L, fn, opts.RawGetString("did"))
	switch lim := opts.RawGetString("limit").(type) {
	case *lua.LNilType:
	case lua.LNumber:
		if lim < 1 || lim > storage.MaxBacklinkLimit || lim != lua.LNumber(int(lim)) {
			L.RaiseError("%s: limit must be an integer between 1 and %d", fn, storage.MaxBacklinkLimit)
		}
		q.Limit = int(lim)
	default:
		L.RaiseError("%s: limit must be a number", fn)
	}
	page, err := v.run.inv.Host.Backlinks(v.run.ctx, q)
	if err != nil {
		v.hostErr(fn, err)
	}
	size := int64(2*tableCost+hashCost+3*fieldCost+stringCost+len(page.Cursor)) + int64(len(page.Records))*elemCost
	for _, b := range page.Records {
		size = addSize(size, tableCost+hashCost+4*(fieldCost+stringCost)+int64(len(b.URI)+len(b.DID)+len(b.Collection)+len(b.RKey)))
	}
	v.charge(size)
	recs := v.newArray(len(page.Records))
	for i, b := range page.Records {
		t := L.CreateTable(0, 4)
		t.RawSetString("uri", lua.LString(b.URI))
		t.RawSetString("did", lua.LString(b.DID))
		t.RawSetString("collection", lua.LString(b.Collection))
		t.RawSetString("rkey", lua.LString(b.RKey))
		recs.RawSetInt(i+1, t)
	}
	out := L.CreateTable(0, 3)
	out.RawSetString("records", recs)
	out.RawSetString("total", lua.LNumber(page.Total))
	if page.Cursor != "" {
		out.RawSetString("cursor", lua.LString(page.Cursor))
	}
	L.Push(out)
	return 1
}

// db.backlinkCount{subject, source, dids}: {records = n, dids = n}, the
// records linking to subject from source and, if dids is true, the
// distinct accounts they belong to (nil otherwise: counting them takes
// time in proportion to them, while the records' count is kept).
func (v *vm) dbBacklinkCount(L *lua.LState) int {
	const fn = "db.backlinkCount"
	opts := v.backlinkOptions(L, fn, "subject", "source", "dids")
	subject, source := subjectAndSource(L, fn, opts)
	q := storage.BacklinkCountQuery{Subject: subject, Source: source}
	switch d := opts.RawGetString("dids").(type) {
	case *lua.LNilType:
	case lua.LBool:
		q.DIDs = bool(d)
	default:
		L.RaiseError("%s: dids must be a boolean", fn)
	}
	n, err := v.run.inv.Host.CountBacklinks(v.run.ctx, q)
	if err != nil {
		v.hostErr(fn, err)
	}
	v.charge(tableCost + hashCost + 2*fieldCost)
	out := L.CreateTable(0, 2)
	out.RawSetString("records", lua.LNumber(n.Records))
	if q.DIDs {
		out.RawSetString("dids", lua.LNumber(n.DIDs))
	}
	L.Push(out)
	return 1
}

// backlinkOptions returns the options table of fn, refusing keys it does
// not take (a misspelt key would otherwise be a silently ignored filter).
func (v *vm) backlinkOptions(L *lua.LState, fn string, keys ...string) *lua.LTable {
	opts, ok := L.Get(1).(*lua.LTable)
	if !ok {
		L.RaiseError("%s: want an options table ({subject = ..., source = ...})", fn)
	}
	v.plain(opts)
	var unknown lua.LValue
	opts.ForEach(func(k, _ lua.LValue) {
		if unknown != nil {
			return
		}
		if s, ok := k.(lua.LString); ok {
			for _, key := range keys {
				if string(s) == key {
					return
				}
			}
		}
		unknown = k
	})
	if unknown != nil {
		L.RaiseError("%s: unknown option %q", fn, lua.LVAsString(unknown))
	}
	return opts
}

// subjectAndSource reads the subject and source options, both required.
func subjectAndSource(L *lua.LState, fn string, opts *lua.LTable) (string, storage.LinkSource) {
	subject := optStringOf(L, fn, opts, "subject")
	if subject == "" {
		L.RaiseError("%s: subject is required (an AT URI, a DID or a URI)", fn)
	}
	raw := optStringOf(L, fn, opts, "source")
	if raw == "" {
		L.RaiseError("%s: source is required (collection:path, for example app.bsky.feed.like:subject.uri)", fn)
	}
	source, err := storage.ParseLinkSource(raw)
	if err != nil {
		L.RaiseError("%s: %s", fn, err.Error())
	}
	return subject, source
}

// optStringOf is the string option key of fn, "" when absent.
func optStringOf(L *lua.LState, fn string, opts *lua.LTable, key string) string {
	switch x := opts.RawGetString(key).(type) {
	case *lua.LNilType:
		return ""
	case lua.LString:
		return string(x)
	default:
		L.RaiseError("%s: %s must be a string", fn, key)
	}
	return ""
}

// didList reads the did option: nil, a DID, or a non-empty list of at
// most storage.MaxBacklinkDIDs of them.
func didList(L *lua.LState, fn string, val lua.LValue) []string {
	switch x := val.(type) {
	case *lua.LNilType:
		return nil
	case lua.LString:
		return []string{string(x)}
	case *lua.LTable:
		n := x.Len()
		if n == 0 {
			L.RaiseError("%s: did is an empty list (leave it out to keep every account)", fn)
		}
		if n > storage.MaxBacklinkDIDs {
			L.RaiseError("%s: did names more than %d accounts", fn, storage.MaxBacklinkDIDs)
		}
		out := make([]string, n)
		for i := range out {
			s, ok := x.RawGetInt(i + 1).(lua.LString)
			if !ok {
				L.RaiseError("%s: did[%d] is not a string", fn, i+1)
			}
			out[i] = string(s)
		}
		return out
	}
	L.RaiseError("%s: did must be a DID or a list of DIDs", fn)
	return nil
}
