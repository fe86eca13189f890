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
const timeLayout = "2006-01-02T15:04:05.000Z"

// installHostLibs prepares the Lexview globals: Go functions are created
// once per VM; the tables holding them are copied for every run.
func (v *vm) installHostLibs() {
	L := v.L
	fn := func(f lua.LGFunction) lua.LValue { return L.NewFunction(f) }
	v.globals = append(v.globals,
		entry{"log", fn(v.logFn)},
		entry{"now", fn(v.nowFn)},
	)
	v.libs["json"] = []entry{
		{"encode", fn(v.jsonEncode)}, {"decode", fn(v.jsonDecode)}, {"array", fn(v.jsonArray)},
		{"null", v.null}, {"empty_array", v.empty},
	}
	v.libs["tid"] = []entry{{"now", fn(v.tidNow)}, {"to_time", fn(v.tidToTime)}, {"from_time", fn(v.tidFromTime)}, {"valid", fn(v.tidValid)}}
	v.libs["db"] = []entry{{"query", fn(v.dbQuery)}, {"get", fn(v.dbGet)}, {"count", fn(v.dbCount)}, {"raw", fn(v.dbRaw)}}
	v.libs["xrpc"] = []entry{{"query", fn(v.xrpcQuery)}, {"procedure", fn(v.xrpcProcedure)}}
	v.libs["http"] = []entry{
		{"request", fn(v.httpRequest)}, {"get", fn(v.httpMethod("GET"))}, {"delete", fn(v.httpMethod("DELETE"))},
		{"head", fn(v.httpMethod("HEAD"))}, {"post", fn(v.httpMethod("POST"))}, {"put", fn(v.httpMethod("PUT"))},
		{"patch", fn(v.httpMethod("PATCH"))},
	}
	v.libs["Record"] = []entry{{"load_all", fn(v.recordLoadAll)}}
	v.installRecord()
}

// setInvocationGlobals sets the globals that describe the invocation.
func (v *vm) setInvocationGlobals(env *lua.LTable, inv *script.Invocation) {
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
		if err == nil {
			env.RawSetString("input", in)
		}
	}
	if ev := inv.Event; ev != nil {
		for k, s := range map[string]string{"action": ev.Action, "uri": ev.URI, "did": ev.DID, "collection": ev.Collection,
			"rkey": ev.RKey, "cid": ev.CID, "rev": ev.Rev} {
			if s != "" {
				env.RawSetString(k, lua.LString(s))
			}
		}
		if len(ev.Record) > 0 {
			if rec, err := v.fromJSON(ev.Record); err == nil {
				env.RawSetString("record", rec)
			}
		}
	}
	// Record is callable: Record(collection, fields [, rkey]).
	rec := env.RawGetString("Record").(*lua.LTable)
	rec.Metatable = v.recordClass
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
	t := v.L.CreateTable(0, len(vars))
	for _, k := range keys {
		t.RawSetString(k, lua.LString(vars[k]))
	}
	return t
}

// log(message): debug log and event log.
func (v *vm) logFn(L *lua.LState) int {
	msg := L.ToStringMeta(L.CheckAny(1)).String()
	if len(msg) > 8<<10 {
		msg = msg[:8<<10] + "…"
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
	out, err := v.encodeJSON(L.CheckAny(1), v.e.limits.MaxString)
	if errors.Is(err, errTooLarge) {
		v.alloc(v.e.limits.MaxString + 1)
	}
	if err != nil {
		L.RaiseError("json.encode: %s", err.Error())
	}
	v.alloc(len(out))
	L.Push(lua.LString(out))
	return 1
}

func (v *vm) jsonDecode(L *lua.LState) int {
	val, err := v.fromJSON([]byte(L.CheckString(1)))
	if err != nil {
		L.RaiseError("json.decode: %s", err.Error())
	}
	L.Push(val)
	return 1
}

// json.array(t): marks t so that it encodes as an array even when empty.
func (v *vm) jsonArray(L *lua.LState) int {
	t := L.OptTable(1, nil)
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
