package wasm

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tetratelabs/wazero/api"
)

// HostModule is the import module of the ABI's host functions.
const HostModule = "lexview"

// maxHostArg bounds a string or JSON a plugin hands a host function.
const maxHostArg = 1 << 20

// instantiateHost registers the host functions (docs/plugins.md):
//
//	log(level i32, ptr i32, len i32)
//	now_ms() -> i64
//	secret(ptr i32, len i32) -> i32     stages the value; -1 when unset
//	config() -> i32                      stages the config JSON
//	http(ptr i32, len i32) -> i32        stages the response JSON
//	result(ptr i32, cap i32) -> i32      copies the staged bytes out
func (r *Runtime) instantiateHost(ctx context.Context) error {
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	b := r.rt.NewHostModuleBuilder(HostModule)
	fn := func(name string, f api.GoModuleFunc, params, results []api.ValueType) {
		b.NewFunctionBuilder().WithGoModuleFunction(f, params, results).Export(name)
	}
	fn("log", r.hostLog, []api.ValueType{i32, i32, i32}, nil)
	fn("now_ms", func(_ context.Context, _ api.Module, stack []uint64) {
		stack[0] = api.EncodeI64(time.Now().UnixMilli())
	}, nil, []api.ValueType{i64})
	fn("secret", r.hostSecret, []api.ValueType{i32, i32}, []api.ValueType{i32})
	fn("config", r.hostConfig, nil, []api.ValueType{i32})
	fn("http", r.hostHTTP, []api.ValueType{i32, i32}, []api.ValueType{i32})
	fn("result", r.hostResult, []api.ValueType{i32, i32}, []api.ValueType{i32})
	_, err := b.Instantiate(ctx)
	return err
}

// current returns the instance a host function runs for; outside a call
// (a host function called from a start function) it traps.
func current(ctx context.Context, name string) *instance {
	inst, _ := ctx.Value(instanceKey{}).(*instance)
	if inst == nil {
		panic(fmt.Errorf("lexview.%s called outside a plugin call", name))
	}
	return inst
}

// read returns the plugin's bytes at ptr/len, trapping the call with a
// protocol error when they are out of range.
func (inst *instance) read(mod api.Module, fn string, ptr, n uint32) []byte {
	if n > maxHostArg {
		panic(inst.protocol("lexview.%s: length %d is over the %d-byte limit", fn, n, maxHostArg))
	}
	b, ok := mod.Memory().Read(ptr, n)
	if !ok {
		panic(inst.protocol("lexview.%s: %d bytes at %d are outside memory", fn, n, ptr))
	}
	return b
}

func (inst *instance) protocol(format string, args ...any) *Error {
	return &Error{Kind: ErrProtocol, Plugin: inst.m.opt.Name, Msg: fmt.Sprintf(format, args...)}
}

// stage keeps b for lexview.result and returns its length.
func (inst *instance) stage(b []byte) uint64 {
	inst.staged = b
	return api.EncodeI32(int32(len(b)))
}

func (r *Runtime) hostLog(ctx context.Context, mod api.Module, stack []uint64) {
	inst := current(ctx, "log")
	level := Level(api.DecodeI32(stack[0]))
	msg := inst.read(mod, "log", uint32(stack[1]), uint32(stack[2]))
	if level < LevelDebug || level > LevelError {
		level = LevelInfo
	}
	inst.logs++
	if inst.logs > r.limits.MaxLogs || inst.m.opt.Env == nil {
		return
	}
	const maxLine = 4 << 10
	if len(msg) > maxLine {
		msg = msg[:maxLine]
	}
	inst.m.opt.Env.Log(ctx, level, strings.ToValidUTF8(string(msg), "\uFFFD"))
}

func (r *Runtime) hostSecret(ctx context.Context, mod api.Module, stack []uint64) {
	inst := current(ctx, "secret")
	key := string(inst.read(mod, "secret", uint32(stack[0]), uint32(stack[1])))
	if inst.m.opt.Env == nil {
		stack[0] = api.EncodeI32(-1)
		return
	}
	v, ok := inst.m.opt.Env.Secret(ctx, key)
	if !ok {
		inst.staged = nil
		stack[0] = api.EncodeI32(-1)
		return
	}
	stack[0] = inst.stage([]byte(v))
}

func (r *Runtime) hostConfig(ctx context.Context, _ api.Module, stack []uint64) {
	inst := current(ctx, "config")
	cfg := []byte("{}")
	if inst.m.opt.Env != nil {
		if c := inst.m.opt.Env.Config(ctx); len(c) > 0 {
			cfg = c
		}
	}
	stack[0] = inst.stage(cfg)
}

func (r *Runtime) hostResult(ctx context.Context, mod api.Module, stack []uint64) {
	inst := current(ctx, "result")
	ptr, n := uint32(stack[0]), uint32(stack[1])
	if uint32(len(inst.staged)) > n {
		panic(inst.protocol("lexview.result: the buffer holds %d bytes, the staged result is %d", n, len(inst.staged)))
	}
	if !mod.Memory().Write(ptr, inst.staged) {
		panic(inst.protocol("lexview.result: %d bytes at %d are outside memory", len(inst.staged), ptr))
	}
	stack[0] = api.EncodeI32(int32(len(inst.staged)))
	inst.staged = nil
}

// HTTPRequest is what a plugin hands lexview.http.
type HTTPRequest struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	// Body is the request body as text; BodyBase64 as base64 (binary).
	Body       string `json:"body,omitempty"`
	BodyBase64 string `json:"body_base64,omitempty"`
}

// HTTPResponse is what lexview.http stages: the response, or Error.
type HTTPResponse struct {
	Status  int               `json:"status,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
	Error   string            `json:"error,omitempty"`
}

func (r *Runtime) hostHTTP(ctx context.Context, mod api.Module, stack []uint64) {
	inst := current(ctx, "http")
	raw := inst.read(mod, "http", uint32(stack[0]), uint32(stack[1]))
	resp := r.doHTTP(ctx, inst, raw)
	out, _ := json.Marshal(resp)
	stack[0] = inst.stage(out)
}

func (r *Runtime) doHTTP(ctx context.Context, inst *instance, raw []byte) HTTPResponse {
	var req HTTPRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return HTTPResponse{Error: "the request is not valid JSON: " + err.Error()}
	}
	u, err := url.Parse(req.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return HTTPResponse{Error: fmt.Sprintf("url %q is not an absolute http(s) URL", req.URL)}
	}
	if !HostAllowed(inst.m.opt.AllowedHosts, u.Hostname()) {
		return HTTPResponse{Error: fmt.Sprintf("host %q is not among the manifest's allowed_hosts", u.Hostname())}
	}
	client := inst.m.opt.HTTPClient
	if client == nil {
		return HTTPResponse{Error: "outbound HTTP is not available"}
	}
	if req.Method == "" {
		req.Method = http.MethodGet
	}
	body := []byte(req.Body)
	if req.BodyBase64 != "" {
		if body, err = base64.StdEncoding.DecodeString(req.BodyBase64); err != nil {
			return HTTPResponse{Error: "body_base64 is not base64"}
		}
	}
	hr, err := http.NewRequestWithContext(ctx, req.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return HTTPResponse{Error: "invalid request: " + err.Error()}
	}
	for k, v := range req.Headers {
		hr.Header.Set(k, v)
	}
	res, err := client.Do(hr)
	if err != nil {
		return HTTPResponse{Error: "request failed: " + err.Error()}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, r.limits.MaxHTTPBody+1))
	if err != nil {
		return HTTPResponse{Error: "reading the response failed: " + err.Error()}
	}
	if int64(len(b)) > r.limits.MaxHTTPBody {
		return HTTPResponse{Error: fmt.Sprintf("the response body is over the %d-byte limit", r.limits.MaxHTTPBody)}
	}
	out := HTTPResponse{Status: res.StatusCode, Headers: map[string]string{}, Body: string(b)}
	for k := range res.Header {
		out.Headers[strings.ToLower(k)] = res.Header.Get(k)
	}
	return out
}

// HostAllowed reports whether host matches one of the patterns: an exact
// hostname, or "*.example.com" for the subdomains of example.com.
func HostAllowed(patterns []string, host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, p := range patterns {
		p = strings.ToLower(p)
		if suffix, ok := strings.CutPrefix(p, "*."); ok {
			if strings.HasSuffix(host, "."+suffix) {
				return true
			}
			continue
		}
		if host == p {
			return true
		}
	}
	return false
}
