//go:build wasip1

// Command bad is a misbehaving plugin for the runtime's tests: each
// library function breaks one rule.
package main

import (
	"encoding/json"
	"strings"
	"unsafe"

	"github.com/lexview/lexview/examples/plugins/pdk"
)

func main() {}

//go:wasmimport lexview secret
func hostSecret(ptr, n int32) int32

//go:wasmimport lexview result
func hostResult(ptr, n int32) int32

//go:wasmexport lv_giant
func giant(ptr unsafe.Pointer, n int32) int64 {
	return pdk.Pack([]byte(`"` + strings.Repeat("x", 2<<20) + `"`))
}

//go:wasmexport lv_malformed
func malformed(ptr unsafe.Pointer, n int32) int64 { return pdk.Pack([]byte("{not json")) }

//go:wasmexport lv_outside
func outside(ptr unsafe.Pointer, n int32) int64 { return int64(0x7fff0000)<<32 | 64 }

var (
	hoard [][]byte
	held  []byte
)

func init() {
	pdk.Register("echo", func(in json.RawMessage) (any, error) { return in, nil })
	// x-*: the cost of encoding/json inside a module (benchmarks).
	pdk.Register("x-unmarshal", func(in json.RawMessage) (any, error) {
		var v struct {
			Text string `json:"text"`
		}
		err := json.Unmarshal(in, &v)
		return json.RawMessage("1"), err
	})
	pdk.Register("x-marshal", func(in json.RawMessage) (any, error) {
		return map[string]any{"clean": true, "matches": []string{}}, nil
	})
	pdk.Register("x-struct", func(in json.RawMessage) (any, error) {
		return struct {
			Clean bool `json:"clean"`
		}{true}, nil
	})
	pdk.Register("panic", func(json.RawMessage) (any, error) { panic("deliberate") })
	pdk.Register("loop", func(json.RawMessage) (any, error) {
		for i := 0; ; i++ {
			if i < 0 {
				return i, nil
			}
		}
	})
	pdk.Register("alloc", func(json.RawMessage) (any, error) {
		for {
			hoard = append(hoard, make([]byte, 1<<20))
		}
	})
	// grow allocates step MiB at a time, forever, keeping the last keep
	// blocks: the memory grows up to the ceiling and the garbage
	// collector works at every step (a deadline's overshoot).
	pdk.Register("grow", func(in json.RawMessage) (any, error) {
		var p struct{ Step, Keep int }
		_ = json.Unmarshal(in, &p)
		ring := make([][]byte, max(p.Keep, 1))
		for i := 0; ; i++ {
			b := make([]byte, p.Step<<20)
			for j := 0; j < len(b); j += 4096 {
				b[j] = byte(i)
			}
			ring[i%len(ring)] = b
		}
	})
	// hold allocates and touches mib MiB and keeps it until the next
	// call: the instance's memory stays that large. With spin it then
	// runs until its deadline.
	pdk.Register("hold", func(in json.RawMessage) (any, error) {
		var p struct {
			MiB  int
			Spin bool
		}
		_ = json.Unmarshal(in, &p)
		held = make([]byte, p.MiB<<20)
		for j := 0; j < len(held); j += 4096 {
			held[j] = 1
		}
		for p.Spin {
			held[0]++
		}
		return len(held) >> 20, nil
	})
	pdk.Register("garbage", func(json.RawMessage) (any, error) {
		return hostSecret(0x7ffffff0, 1<<19), nil
	})
	pdk.Register("short-buffer", func(json.RawMessage) (any, error) {
		k := []byte("token")
		n := hostSecret(int32(uintptr(unsafe.Pointer(&k[0]))), int32(len(k)))
		buf := make([]byte, 1)
		return hostResult(int32(uintptr(unsafe.Pointer(&buf[0]))), n-1), nil
	})
	pdk.Register("secret", func(in json.RawMessage) (any, error) {
		var key string
		_ = json.Unmarshal(in, &key)
		v, ok := pdk.Secret(key)
		return map[string]any{"value": v, "set": ok}, nil
	})
	pdk.Register("config", func(json.RawMessage) (any, error) {
		var cfg map[string]any
		err := pdk.Config(&cfg)
		return cfg, err
	})
	pdk.Register("now", func(json.RawMessage) (any, error) { return pdk.NowMs(), nil })
	pdk.Register("log", func(in json.RawMessage) (any, error) {
		pdk.Log(pdk.Warn, string(in))
		return nil, nil
	})
	pdk.Register("fail", func(json.RawMessage) (any, error) { return nil, errString("refused politely") })
	pdk.Register("get", func(in json.RawMessage) (any, error) {
		var url string
		_ = json.Unmarshal(in, &url)
		res, err := pdk.HTTP(pdk.Request{URL: url})
		if err != nil {
			return nil, err
		}
		return map[string]any{"status": res.Status, "body": res.Body}, nil
	})
}

type errString string

func (e errString) Error() string { return string(e) }
