//go:build wasip1

// Package pdk is the plugin development kit of the examples: the Go side
// of Lexview's plugin ABI (docs/plugins.md, api_version 1). A plugin
// imports it, registers its functions and builds with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o plugin.wasm .
//
// The package exports lv_alloc and lv_call for the plugin; an
// external-account plugin adds its own lv_auth_* exports with Export.
package pdk

import (
	"encoding/json"
	"errors"
	"unsafe"
)

// Host functions (import module "lexview").

//go:wasmimport lexview log
func hostLog(level int32, ptr unsafe.Pointer, n int32)

//go:wasmimport lexview now_ms
func hostNowMs() int64

//go:wasmimport lexview secret
func hostSecret(ptr unsafe.Pointer, n int32) int32

//go:wasmimport lexview config
func hostConfig() int32

//go:wasmimport lexview http
func hostHTTP(ptr unsafe.Pointer, n int32) int32

//go:wasmimport lexview result
func hostResult(ptr unsafe.Pointer, n int32) int32

// input is the buffer of the call in progress; result the last answer.
// Both stay referenced so the garbage collector keeps them until the
// host has read them.
var input, result []byte

//go:wasmexport lv_alloc
func lvAlloc(size int32) unsafe.Pointer {
	if int(size) > cap(input) {
		input = make([]byte, size)
	}
	input = input[:size]
	if size == 0 {
		input = input[:cap(input)]
		if len(input) == 0 {
			input = make([]byte, 1)
		}
	}
	return unsafe.Pointer(&input[0])
}

// Export answers one ABI call: f gets the input the host wrote and its
// answer is returned as the packed pointer and length of the envelope
// {"ok": value} or {"error": message}.
func Export(ptr unsafe.Pointer, n int32, f func(in []byte) (any, error)) int64 {
	return answer(f(unsafe.Slice((*byte)(ptr), n)))
}

// answer encodes the envelope of v or err. A json.RawMessage or []byte
// value is spliced in as it is (it must be valid JSON).
func answer(v any, err error) int64 {
	if err != nil {
		msg, _ := json.Marshal(err.Error())
		return Pack(append(append([]byte(`{"error":`), msg...), '}'))
	}
	var body []byte
	switch x := v.(type) {
	case json.RawMessage:
		body = x
	case []byte:
		body = x
	default:
		if body, err = json.Marshal(v); err != nil {
			return answer(nil, errors.New("encoding the result: "+err.Error()))
		}
	}
	if len(body) == 0 {
		body = []byte("null")
	}
	out := make([]byte, 0, len(body)+7)
	out = append(out, `{"ok":`...)
	out = append(out, body...)
	return Pack(append(out, '}'))
}

// Pack returns b as the ABI's packed result: pointer in the high 32 bits,
// length in the low 32. b must stay referenced until the host reads it.
func Pack(b []byte) int64 {
	result = b
	if len(b) == 0 {
		return 0
	}
	return int64(uintptr(unsafe.Pointer(&b[0])))<<32 | int64(len(b))
}

// Function is a script-library function: its input is the JSON the
// script passed, its answer is encoded as JSON for the script (a
// json.RawMessage answer is passed through as it is).
type Function func(input json.RawMessage) (any, error)

var functions = map[string]Function{}

// Register makes f callable from Lua as plugins.call(id, name, input).
func Register(name string, f Function) { functions[name] = f }

// lv_call(name_ptr, name_len, in_ptr, in_len) -> packed result: the
// script-library call of the function name with the JSON input.
//
//go:wasmexport lv_call
func lvCall(namePtr unsafe.Pointer, nameLen int32, inPtr unsafe.Pointer, inLen int32) int64 {
	name := unsafe.String((*byte)(namePtr), nameLen)
	f := functions[name]
	if f == nil {
		return answer(nil, errors.New("no function "+name))
	}
	return answer(f(json.RawMessage(unsafe.Slice((*byte)(inPtr), inLen))))
}

// Log levels.
const (
	Debug = iota
	Info
	Warn
	Error
)

// Log writes a line to the instance's event log (a plugin.log entry).
func Log(level int, msg string) {
	b := []byte(msg)
	if len(b) == 0 {
		return
	}
	hostLog(int32(level), unsafe.Pointer(&b[0]), int32(len(b)))
}

// NowMs is the host's clock in Unix milliseconds.
func NowMs() int64 { return hostNowMs() }

// take copies the host's staged result of n bytes.
func take(n int32) []byte {
	buf := make([]byte, n+1)
	got := hostResult(unsafe.Pointer(&buf[0]), n)
	return buf[:got]
}

// Secret returns the secret key as the operator set it.
func Secret(key string) (string, bool) {
	b := []byte(key)
	if len(b) == 0 {
		return "", false
	}
	n := hostSecret(unsafe.Pointer(&b[0]), int32(len(b)))
	if n < 0 {
		return "", false
	}
	return string(take(n)), true
}

// Config decodes the plugin's configuration into dst.
func Config(dst any) error { return json.Unmarshal(take(hostConfig()), dst) }

// Request is an outbound HTTP request; the host only sends it to the
// hosts the manifest allows.
type Request struct {
	Method  string            `json:"method,omitempty"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
}

// Response is the answer to a Request.
type Response struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
	Error   string            `json:"error"`
}

// HTTP sends req through the host.
func HTTP(req Request) (Response, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return Response{}, err
	}
	var res Response
	if err := json.Unmarshal(take(hostHTTP(unsafe.Pointer(&b[0]), int32(len(b)))), &res); err != nil {
		return Response{}, err
	}
	if res.Error != "" {
		return res, errors.New(res.Error)
	}
	return res, nil
}
