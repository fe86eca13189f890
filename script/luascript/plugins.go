package luascript

import (
	"bytes"
	"errors"

	lua "github.com/yuin/gopher-lua"
)

// installPlugins prepares the plugins library: calls into script-library
// plugins (WASM modules the operator installed).
func (v *vm) installPlugins() {
	t := v.lib("plugins")
	t.RawSetString("call", v.L.NewFunction(v.pluginsCall))
}

// plugins.call(id, function [, input]) → the function's answer. input is
// encoded as JSON (nil as null); the answer is decoded from JSON. The call
// runs within the script's deadline.
func (v *vm) pluginsCall(L *lua.LState) int {
	id, fn := L.CheckString(1), L.CheckString(2)
	input := []byte("null")
	if L.GetTop() >= 3 && L.Get(3) != lua.LNil {
		input = bytes.Clone(v.encodeCharged("plugins.call", L.Get(3)))
	}
	out, err := v.run.inv.Host.CallPlugin(v.run.ctx, v.run.inv, id, fn, input)
	if err != nil {
		v.hostErr("plugins.call", err)
	}
	val, err := v.fromJSON(out)
	if errors.Is(err, errMemory) {
		v.raise(err)
	}
	if err != nil {
		L.RaiseError("plugins.call: plugin %s answered invalid JSON: %s", id, err.Error())
	}
	L.Push(val)
	return 1
}
