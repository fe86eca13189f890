package luascript

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"
	lua "github.com/yuin/gopher-lua"
)

// xrpc.query(nsid, params): the decoded response, or nil, error, status.
func (v *vm) xrpcQuery(L *lua.LState) int {
	nsid := L.CheckString(1)
	params := url.Values{}
	if t := v.plain(L.OptTable(2, nil)); t != nil {
		t.ForEach(func(k, val lua.LValue) {
			name := lua.LVAsString(k)
			list, ok := val.(*lua.LTable)
			if !ok {
				params.Set(name, paramString(L, name, val))
				return
			}
			// A list is an array parameter: the parameter repeated.
			n := list.Len()
			if n == 0 || countKeys(v.plain(list)) != n {
				L.RaiseError("xrpc.query: parameter %s: a table must be a non-empty list of values", name)
			}
			for i := 1; i <= n; i++ {
				params.Add(name, paramString(L, name, list.RawGetInt(i)))
			}
		})
	}
	return v.xrpcCall(L, http.MethodGet, nsid, params, nil)
}

// paramString is a query parameter's value: a string, number or boolean
// as tostring writes it.
func paramString(L *lua.LState, name string, val lua.LValue) string {
	switch val.Type() {
	case lua.LTString, lua.LTNumber, lua.LTBool:
		return lua.LVAsString(L.ToStringMeta(val))
	}
	L.RaiseError("xrpc.query: parameter %s: a %s is no parameter value", name, val.Type())
	return ""
}

// xrpc.procedure(nsid, input): the decoded response, or nil, error, status.
func (v *vm) xrpcProcedure(L *lua.LState) int {
	nsid := L.CheckString(1)
	body := []byte("{}")
	if in := L.Get(2); in != lua.LNil {
		body = bytes.Clone(v.encodeCharged("xrpc.procedure", in))
	}
	return v.xrpcCall(L, http.MethodPost, nsid, nil, body)
}

func (v *vm) xrpcCall(L *lua.LState, method, nsid string, params url.Values, body []byte) int {
	if _, err := syntax.ParseNSID(nsid); err != nil {
		L.RaiseError("xrpc: invalid NSID %q", nsid)
	}
	inv := v.run.inv
	if inv.Depth+1 > v.e.limits.MaxDepth {
		L.RaiseError("xrpc: calls nested deeper than %d", v.e.limits.MaxDepth)
	}
	status, resp, err := inv.Host.XRPC(v.run.ctx, inv, method, nsid, params, body)
	if err != nil {
		L.Push(lua.LNil)
		L.Push(lua.LString(err.Error()))
		L.Push(lua.LNumber(0))
		return 3
	}
	v.alloc(int64(len(resp)))
	if status < 200 || status > 299 {
		var e struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(resp, &e)
		msg := e.Error
		if msg == "" {
			msg = http.StatusText(status)
		}
		L.Push(lua.LNil)
		L.Push(lua.LString(msg))
		L.Push(lua.LNumber(status))
		return 3
	}
	val, err := v.fromJSON(resp)
	if err != nil {
		L.Push(lua.LNil)
		L.Push(lua.LString("response is not JSON: " + err.Error()))
		L.Push(lua.LNumber(status))
		return 3
	}
	L.Push(val)
	return 1
}

// httpMethod returns http.get(url, opts), http.post(url, body, opts), ...
func (v *vm) httpMethod(method string) lua.LGFunction {
	withBody := method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch
	return func(L *lua.LState) int {
		req := L.CreateTable(0, 4)
		req.RawSetString("method", lua.LString(method))
		req.RawSetString("url", lua.LString(L.CheckString(1)))
		optIdx := 2
		if withBody {
			req.RawSetString("body", L.Get(2))
			optIdx = 3
		}
		if opts := v.plain(L.OptTable(optIdx, nil)); opts != nil {
			req.RawSetString("headers", opts.RawGetString("headers"))
			req.RawSetString("timeout", opts.RawGetString("timeout"))
		}
		L.SetTop(0)
		L.Push(req)
		return v.httpRequest(L)
	}
}

// http.request{method, url, headers, body, timeout}: {status, headers,
// body}, or nil and an error message. Requests go through the host's
// guarded client (no private addresses unless the operator allowed them).
func (v *vm) httpRequest(L *lua.LState) int {
	opts := v.plain(L.CheckTable(1))
	method := strings.ToUpper(optString(L, opts, "method", "GET"))
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		L.RaiseError("http: unsupported method %q", method)
	}
	target := optString(L, opts, "url", "")
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		L.RaiseError("http: an absolute http(s) URL is required, got %q", target)
	}
	var body io.Reader
	switch b := opts.RawGetString("body").(type) {
	case *lua.LNilType:
	case lua.LString:
		body = strings.NewReader(string(b))
	case *lua.LTable:
		body = bytes.NewReader(bytes.Clone(v.encodeCharged("http: body", b)))
	default:
		L.RaiseError("http: body must be a string or a table")
	}
	ctx := v.run.ctx
	if t, ok := opts.RawGetString("timeout").(lua.LNumber); ok && t > 0 {
		var cancel func()
		ctx, cancel = context.WithTimeout(ctx, time.Duration(float64(t)*float64(time.Second)))
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		L.RaiseError("http: %s", err.Error())
	}
	if _, isTable := opts.RawGetString("body").(*lua.LTable); isTable {
		req.Header.Set("Content-Type", "application/json")
	}
	if hdrs, ok := opts.RawGetString("headers").(*lua.LTable); ok {
		v.plain(hdrs).ForEach(func(k, val lua.LValue) { req.Header.Set(lua.LVAsString(k), lua.LVAsString(val)) })
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "Lexview-script")
	}
	resp, err := v.run.inv.Host.HTTPClient().Do(req)
	if err != nil {
		L.Push(lua.LNil)
		L.Push(lua.LString(err.Error()))
		return 2
	}
	defer resp.Body.Close()
	// The body is read no further than the limit and the memory left
	// allow; its string is made from the bytes read (one copy).
	limit := v.e.limits.MaxHTTPBody
	room := min(limit, v.strRoom()/2)
	data, err := io.ReadAll(io.LimitReader(resp.Body, room+1))
	if err != nil {
		L.Push(lua.LNil)
		L.Push(lua.LString("reading the response failed: " + err.Error()))
		return 2
	}
	if int64(len(data)) > room {
		if room < limit {
			v.alloc(2 * int64(len(data))) // raises the memory error
		}
		L.Push(lua.LNil)
		L.Push(lua.LString("response body larger than " + strconv.FormatInt(limit, 10) + " bytes"))
		return 2
	}
	size := int64(tableCost+hashCost+3*fieldCost) + 2*int64(len(data))
	for k, vals := range resp.Header {
		if len(vals) > 0 {
			size = addSize(size, fieldCost+2*stringCost+int64(len(k)+len(vals[0])))
		}
	}
	v.charge(size)
	out := L.CreateTable(0, 3)
	out.RawSetString("status", lua.LNumber(resp.StatusCode))
	out.RawSetString("body", lua.LString(data))
	h := L.CreateTable(0, len(resp.Header))
	for k, vals := range resp.Header {
		if len(vals) > 0 {
			h.RawSetString(strings.ToLower(k), lua.LString(vals[0]))
		}
	}
	out.RawSetString("headers", h)
	L.Push(out)
	return 1
}
