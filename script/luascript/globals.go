package luascript

import (
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"
	lua "github.com/yuin/gopher-lua"

	"github.com/lexview/lexview/script"
)

// timeLayout is how scripts see times: atproto datetimes, UTC, milliseconds.
const timeLayout = script.TimeLayout

// installHostLibs prepares the Lexview globals: Go functions are created
// once per VM; the tables holding them are copied for every run.
func (v *vm) installHostLibs() {
	L := v.L
	set := func(t *lua.LTable, fns map[string]lua.LGFunction) {
		for name, f := range fns {
			t.RawSetString(name, L.NewFunction(f))
		}
	}
	set(v.base, map[string]lua.LGFunction{"log": v.logFn, "now": v.nowFn, "param_values": v.paramValues})
	set(v.lib("json"), map[string]lua.LGFunction{"encode": v.jsonEncode, "decode": v.jsonDecode, "array": v.jsonArray})
	v.lib("json").RawSetString("null", v.null)
	v.lib("json").RawSetString("empty_array", v.empty)
	set(v.lib("tid"), map[string]lua.LGFunction{"now": v.tidNow, "to_time": v.tidToTime, "from_time": v.tidFromTime, "valid": v.tidValid})
	set(v.lib("db"), map[string]lua.LGFunction{"query": v.dbQuery, "get": v.dbGet, "count": v.dbCount, "raw": v.dbRaw, "labels": v.dbLabels,
		"backlinks": v.dbBacklinks, "backlinkCount": v.dbBacklinkCount, "search": v.dbSearch})
	set(v.lib("xrpc"), map[string]lua.LGFunction{"query": v.xrpcQuery, "procedure": v.xrpcProcedure})
	set(v.lib("http"), map[string]lua.LGFunction{
		"request": v.httpRequest, "get": v.httpMethod("GET"), "delete": v.httpMethod("DELETE"), "head": v.httpMethod("HEAD"),
		"post": v.httpMethod("POST"), "put": v.httpMethod("PUT"), "patch": v.httpMethod("PATCH"),
	})
	set(v.lib("Record"), map[string]lua.LGFunction{"load_all": v.recordLoadAll})
	v.installRecord()
	v.installLinked()
	v.installPlugins()
}

// setInvocationGlobals sets the globals that describe the invocation.
// Decoding input and record is charged to the run; it fails only when
// that does not fit (JSON that does not decode leaves the global unset).
func (v *vm) setInvocationGlobals(env *lua.LTable, inv *script.Invocation) error {
	L := v.L
	params := L.CreateTable(0, len(inv.Params))
	for k, vals := range inv.Params {
		if len(vals) > 0 {
			params.RawSetString(k, lua.LString(vals[0]))
		}
	}
	env.RawSetString("params", params)
	env.RawSetString("method", lua.LString(inv.Method))
	if inv.Collection != "" {
		env.RawSetString("collection", lua.LString(inv.Collection))
	}
	if c := inv.Caller; c != nil {
		t := L.CreateTable(0, 2)
		t.RawSetString("did", lua.LString(c.DID))
		if c.ClientID != "" {
			t.RawSetString("client_id", lua.LString(c.ClientID))
		}
		env.RawSetString("caller", t)
	}
	if len(inv.Input) > 0 {
		in, err := v.fromJSON(inv.Input)
		if errors.Is(err, errMemory) {
			return err
		}
		if err == nil {
			env.RawSetString("input", in)
		}
	}
	if inv.Label != nil {
		env.RawSetString("label", v.newLabelTable(inv.Label))
	}
	if ev := inv.Event; ev != nil {
		for _, f := range eventFields(ev) {
			if f.v != "" {
				env.RawSetString(f.k, lua.LString(f.v))
			}
		}
		if len(ev.Record) > 0 {
			rec, err := v.fromJSON(ev.Record)
			if errors.Is(err, errMemory) {
				return err
			}
			if err == nil {
				env.RawSetString("record", rec)
			}
		}
	}
	return nil
}

// eventField is one string global of a record event.
type eventField struct{ k, v string }

// eventFields lists the string globals of a record event, in a fixed order.
func eventFields(ev *script.RecordEvent) [7]eventField {
	return [7]eventField{{"action", ev.Action}, {"uri", ev.URI}, {"did", ev.DID}, {"collection", ev.Collection},
		{"rkey", ev.RKey}, {"cid", ev.CID}, {"rev", ev.Rev}}
}

// envSize is how many globals setInvocationGlobals sets, with _G and the
// script's handle: the capacity hint of the run's environment.
func envSize(inv *script.Invocation) int {
	n := 4 // _G, params, method, handle
	for _, set := range []bool{inv.Collection != "", inv.Caller != nil, len(inv.Input) > 0, inv.Label != nil} {
		if set {
			n++
		}
	}
	if ev := inv.Event; ev != nil {
		for _, f := range eventFields(ev) {
			if f.v != "" {
				n++
			}
		}
		if len(ev.Record) > 0 {
			n++
		}
	}
	return n
}

// loadVars builds the vars table from the host's decrypted variables.
func (v *vm) loadVars() *lua.LTable {
	vars, err := v.run.inv.Host.Vars(v.run.ctx)
	if err != nil {
		v.L.RaiseError("reading script variables failed: %s", err.Error())
	}
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	size := int64(tableCost + hashCost)
	for k, val := range vars {
		size = addSize(size, fieldCost+2*stringCost+int64(len(k)+len(val)))
	}
	v.charge(size)
	t := v.L.CreateTable(0, len(vars))
	for _, k := range keys {
		t.RawSetString(k, lua.LString(vars[k]))
	}
	return t
}

// log(message): debug log and event log.
// param_values(name): every value of a query-string parameter, in the
// order given, as a list of strings (empty when absent, and encoded as a
// JSON array then too): an array parameter (?uris=a&uris=b), of which
// params holds the first value only.
func (v *vm) paramValues(L *lua.LState) int {
	vals := v.run.inv.Params[L.CheckString(1)]
	size := 16 * len(vals)
	for _, s := range vals {
		size += len(s)
	}
	v.charge(int64(size))
	t := L.CreateTable(len(vals), 0)
	for _, s := range vals {
		t.Append(lua.LString(s))
	}
	t.Metatable = v.arrayMT // a JSON array even when empty
	L.Push(t)
	return 1
}

func (v *vm) logFn(L *lua.LState) int {
	msg := L.ToStringMeta(L.CheckAny(1)).String()
	if len(msg) > maxLogMessage {
		v.charge(int64(maxLogMessage + len("…")))
		msg = msg[:maxLogMessage] + "…"
	}
	if !v.line() {
		return 0
	}
	v.run.logs++
	if v.run.logs > maxLogEvents {
		// The event log is not a firehose: later calls of this run go
		// to the debug log only.
		v.e.log.Debug("script log (event-log quota of this run used up)", "method", v.run.inv.Method, "message", msg)
		return 0
	}
	v.run.inv.Host.Log(v.run.ctx, v.run.inv, msg)
	return 0
}

// now(): the current time as an atproto datetime string.
func (v *vm) nowFn(L *lua.LState) int {
	L.Push(lua.LString(v.e.now().UTC().Format(timeLayout)))
	return 1
}

func (v *vm) jsonEncode(L *lua.LState) int {
	L.Push(lua.LString(v.encodeCharged("json.encode", L.CheckAny(1))))
	return 1
}

// json.decode(s): the decoded value, charged as it is built.
func (v *vm) jsonDecode(L *lua.LState) int {
	val, err := v.fromJSON([]byte(L.CheckString(1)))
	if errors.Is(err, errMemory) {
		v.raise(err)
	}
	if err != nil {
		L.RaiseError("json.decode: %s", err.Error())
	}
	L.Push(val)
	return 1
}

// json.array(t): marks t so that it encodes as an array even when empty.
func (v *vm) jsonArray(L *lua.LState) int {
	t := v.plain(L.OptTable(1, nil))
	if t == nil {
		t = L.CreateTable(0, 0)
	}
	if t.Metatable != lua.LNil && t.Metatable != v.arrayMT {
		L.RaiseError("json.array: the table already has a metatable")
	}
	t.Metatable = v.arrayMT
	L.Push(t)
	return 1
}

// tidSource hands out monotonic TIDs.
type tidSource struct {
	mu    sync.Mutex
	clock *syntax.TIDClock
}

func newTIDSource() *tidSource { return &tidSource{clock: syntax.NewTIDClock(0)} }

func (s *tidSource) next() syntax.TID {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clock.Next()
}

func (v *vm) tidNow(L *lua.LState) int {
	L.Push(lua.LString(v.e.tids.next().String()))
	return 1
}

func (v *vm) tidToTime(L *lua.LState) int {
	t, err := syntax.ParseTID(L.CheckString(1))
	if err != nil {
		L.RaiseError("tid.to_time: %s", err.Error())
	}
	L.Push(lua.LString(t.Time().UTC().Format(timeLayout)))
	return 1
}

// tid.from_time(datetime or unix seconds): the TID of that moment.
func (v *vm) tidFromTime(L *lua.LState) int {
	var ts time.Time
	switch x := L.CheckAny(1).(type) {
	case lua.LNumber:
		ts = time.UnixMicro(int64(float64(x) * 1e6))
	case lua.LString:
		dt, err := syntax.ParseDatetimeLenient(string(x))
		if err != nil {
			L.RaiseError("tid.from_time: %s", err.Error())
		}
		ts = dt.Time()
	default:
		L.ArgError(1, "a datetime string or unix seconds expected")
	}
	L.Push(lua.LString(syntax.NewTIDFromTime(ts, 0).String()))
	return 1
}

func (v *vm) tidValid(L *lua.LState) int {
	_, err := syntax.ParseTID(L.CheckString(1))
	L.Push(lua.LBool(err == nil))
	return 1
}
