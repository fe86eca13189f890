package luascript

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/script"
	"github.com/lexview/lexview/storage"
)

// FuzzScript compiles and runs arbitrary source with a small budget: the
// loader and the VM must fail cleanly (a script.Error), never panic or
// hang.
func FuzzScript(f *testing.F) {
	for _, seed := range []string{
		`function handle() return {1, 2, "x" .. 3} end`,
		`function handle() local t = {} for i = 1, 10 do t[i] = i * 2 end return t end`,
		`function handle() return json.decode('{"a":[1,{"b":null}]}') end`,
		`function handle() return string.format("%5.2f %s", 1.5, "x") .. ("ab"):rep(3, ",") end`,
		`function handle( end`,
		`local x = "a" .. nil`,
		`function handle() return setmetatable({}, {__concat = function() return "m" end}) .. "x" end`,
		`function handle() while true do end end`,
		`return 1`,
		`goto x ::x::`,
		`function handle() local t, k = {}, 1 t[k], t[k + 1] = 1, 2 t[#t + 1] = {[k] = t} return t end`,
	} {
		f.Add(seed)
	}
	e := New(Options{Limits: Limits{Instructions: 20_000, MaxString: 1 << 16, MaxAllocated: 1 << 20}})
	f.Fuzz(func(t *testing.T, src string) {
		p, err := e.Compile("fuzz", src)
		if err != nil {
			if kindOf(err) != script.ErrSyntax {
				t.Fatalf("compile error of kind %d: %v", kindOf(err), err)
			}
			return
		}
		out, err := p.Run(context.Background(), &script.Invocation{Host: nopHost{}, Kind: script.KindQuery, Method: "com.example.fuzz"})
		if err != nil && kindOf(err) == 0 {
			t.Fatalf("run failed with a non-script error: %v", err)
		}
		if err == nil && len(out) == 0 {
			t.Fatal("no output and no error")
		}
	})
}

// memSizes are the size arguments FuzzMemoryCap's calls take: small and
// large, past the limits, past int64, and not numbers at all.
var memSizes = []string{"0", "1", "3", "100", "1000", "2^12", "2^16", "2^18", "2^20", "2^24", "2^31", "2^53", "2^62", "2^63", "1e300", "-1", "0/0", "1/0"}

// memCalls are the statements FuzzMemoryCap composes: library and host
// calls that make memory in proportion to their arguments. $S and $R
// name string variables, $T the table variable, $N a size from memSizes.
var memCalls = []string{
	`$S = string.rep($S, $N)`,
	`$S = string.rep($S, $N, $R)`,
	`$S = $S .. $R`,
	`$S = string.format("%s%q%5.2s", $S, $R, $S)`,
	`$S = string.format("%99.99f|% #x|%-99s", $N, $S, $R)`,
	`$S = string.format(string.rep("%s", $N), $S, $R)`,
	`$S = $S:upper()`,
	`$S = $S:lower()`,
	`$S = $S:reverse()`,
	`$S = ($S:gsub(".", "%0%0"))`,
	`$S = ($S:gsub("^.*$", string.rep("%0", $N)))`,
	`$S = ($S:gsub("(.)", function(c) return $R end))`,
	`$S = table.concat($T, $R)`,
	`$T[#$T + 1] = $S`,
	`$T = {unpack($T)}`,
	`$T = {$S:byte(1, $N)}`,
	`$T = table.pack(unpack($T))`,
	`$T = (function(...) return {...} end)(unpack($T))`,
	`$T = {select(2, unpack($T))}`,
	`$S = string.char(unpack($T))`,
	`print(unpack($T))`,
	`print($S, $R, $T)`,
	`log($S)`,
	`$S = tostring($N) .. tostring($T)`,
	`$S = os.date($S)`,
	`$S = os.date(string.rep("%c", $N))`,
	`$T = json.decode($S)`,
	`$S = json.encode($T)`,
	`$S = json.encode({$S, $R, $T})`,
	`$T = json.decode("[" .. string.rep("{},", $N) .. "1]")`,
	`$T = db.raw("rows", {$N})`,
	`$T = db.query{collection = "com.example.post", limit = 100}.records`,
	`$S = json.encode(db.query{collection = "com.example.post", limit = 100})`,
	`local ok, e = pcall(error, $S) $S = tostring(e)`,
	`local ok, e = pcall(function() return nil .. $S end) $R = tostring(e)`,
	`$T = Record("com.example.x", $T)`,
	`$S = $S:sub($N)`,
	`$S, $R = $R, $S`,
	`$T = {}`,
	`$T[$N] = 1`,
	`rawset($T, $N, 1)`,
	`table.insert($T, $N, 1)`,
	`$T = {[$N] = $S}`,
}

// memHost answers db.raw with one row whose value is as long as the
// first parameter asks (within 4 MiB), and db.query with a page of
// 20 KiB records; it allocates nothing per call.
type memHost struct {
	nopHost
	big  string
	page storage.RecordQueryPage
}

func newMemHost() memHost {
	h := memHost{big: strings.Repeat("x", 4<<20)}
	value := json.RawMessage(`{"text":"` + strings.Repeat("y", 20<<10) + `","n":[1,2,{}]}`)
	for i := range 100 {
		h.page.Records = append(h.page.Records, storage.Record{URI: "at://did:plc:abc/com.example.post/" + strconv.Itoa(i), CID: "bafy", Value: value})
	}
	return h
}

func (h memHost) RawQuery(_ context.Context, _ string, args []any, _ int, _ int64) (storage.RawResult, error) {
	n := 0
	if len(args) > 0 {
		switch x := args[0].(type) {
		case int64:
			n = int(min(max(x, 0), int64(len(h.big))))
		case float64:
			n = int(min(max(x, 0), float64(len(h.big))))
		}
	}
	return storage.RawResult{Columns: []string{"v"}, Rows: [][]any{{h.big[:n]}}}, nil
}

func (h memHost) QueryRecords(context.Context, storage.RecordQuery) (storage.RecordQueryPage, error) {
	return h.page, nil
}

// memProgram turns fuzz bytes into a script: each three bytes pick a call
// from memCalls, its variables and its size; every call runs in a pcall
// so that the next one runs after a failure.
func memProgram(data []byte) string {
	var b strings.Builder
	b.WriteString("local s1, s2, s3, t = \"ab\", \"{\\\"k\\\":[1,2]}\", \"%c%Y\", {\"a\", \"b\", 3}\nfunction handle()\n")
	strVars := []string{"s1", "s2", "s3"}
	for i := 0; i+2 < len(data) && i < 3*48; i += 3 {
		call := memCalls[int(data[i])%len(memCalls)]
		s := strVars[int(data[i+1])%len(strVars)]
		r := strVars[int(data[i+1]/3)%len(strVars)]
		n := memSizes[int(data[i+2])%len(memSizes)]
		call = strings.NewReplacer("$S", s, "$R", r, "$T", "t", "$N", "("+n+")").Replace(call)
		b.WriteString("  pcall(function() " + call + " end)\n")
	}
	b.WriteString("  return {#s1, #s2, #s3, type(t)}\nend\n")
	return b.String()
}

// FuzzMemoryCap runs random compositions of the calls that make memory
// under a small cap: the accounting must stay within [0, cap], the run
// must end with a result or a script error (never a Go panic) soon after
// its deadline, and the heap must not allocate more than a few times the
// cap.
func FuzzMemoryCap(f *testing.F) {
	// Each three bytes: a call (memCalls), its variables, its size (memSizes).
	for _, seed := range [][]byte{
		{0, 0, 12, 0, 0, 7, 13, 0, 0, 2, 0, 0, 13, 0, 0, 2, 0, 0, 13, 0, 0, 20, 0, 0}, // rep 2^62, then build, print(unpack(t))
		{0, 0, 7, 6, 0, 0, 7, 0, 0, 8, 0, 0, 9, 0, 0, 11, 3, 0},                       // 512 KiB, upper, lower, reverse, gsub
		{0, 0, 6, 13, 0, 0, 14, 0, 0, 16, 0, 0, 17, 0, 0, 18, 0, 0, 19, 0, 0},         // varargs
		{25, 0, 7, 0, 2, 6, 24, 2, 0},                                                 // os.date: %c × 2^18, then "%c%Y" × 2^16
		{29, 0, 7, 29, 0, 6, 29, 0, 6},                                                // json.decode of {} × 2^18, 2^16
		{30, 0, 7, 30, 0, 7, 30, 0, 7, 30, 0, 7, 30, 0, 9},                            // db.raw rows
		{31, 0, 0, 31, 0, 0, 32, 0, 0, 27, 0, 0, 26, 0, 0},                            // db.query pages, encode, decode
		{0, 0, 7, 10, 0, 4, 10, 0, 4},                                                 // gsub repeating a capture
		{0, 1, 5, 4, 1, 16, 5, 0, 5, 5, 0, 13, 3, 1, 0, 28, 0, 0},                     // format, encode
		{0, 0, 7, 33, 0, 0, 33, 0, 0, 34, 0, 0, 34, 0, 0},                             // caught errors
		{0, 2, 6, 35, 0, 0, 36, 0, 6, 21, 0, 0, 22, 0, 0, 23, 0, 14},                  // Record, sub, print, log, tostring
		{39, 0, 9, 40, 0, 12, 41, 0, 13, 42, 0, 9, 39, 0, 3, 35, 0, 0, 39, 0, 16},     // stores far past the end of an array part, a copy
	} {
		f.Add(seed)
	}
	const limit = 8 << 20
	timeout := 2 * time.Second
	e := New(Options{Limits: Limits{Instructions: 200_000, Timeout: timeout, MaxString: 1 << 20, MaxAllocated: limit}})
	var mem memory
	e.afterRun = func(r *run) { mem = r.mem }
	host := newMemHost()
	f.Fuzz(func(t *testing.T, data []byte) {
		src := memProgram(data)
		p, err := e.Compile("fuzz", src)
		if err != nil {
			t.Fatalf("%v\n%s", err, src)
		}
		mem = memory{}
		start, before := time.Now(), heapAllocs()
		_, err = p.Run(context.Background(), &script.Invocation{Host: host, Kind: script.KindQuery, Method: "com.example.fuzz"})
		allocated, took := heapAllocs()-before, time.Since(start)
		if mem.limit != limit || mem.used < 0 || mem.used > mem.limit {
			t.Fatalf("accounting out of range: %+v\n%s", mem, src)
		}
		if err != nil && (kindOf(err) == 0 || strings.Contains(err.Error(), "internal error")) {
			t.Fatalf("not a clean script error: %v\n%s", err, src)
		}
		// Generous: a loaded machine may be slow, but not by seconds past
		// the deadline (the unchecked paths ran 10 to 20 s past it).
		if took > timeout+10*time.Second {
			t.Fatalf("the run took %s with a deadline of %s\n%s", took, timeout, src)
		}
		// The cap bounds what a run holds; growing buffers leave garbage
		// too (see heapBound), and the VM makes some alone within the
		// instruction budget. Runs allocate up to about twice the cap.
		if allocated > 8*limit {
			t.Fatalf("the heap allocated %d MiB under a %d MiB cap\n%s", allocated>>20, limit>>20, src)
		}
	})
}
