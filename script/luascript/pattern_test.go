package luascript

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/lexview/lexview/script"
)

// serialize renders a call's results the same way on both sides.
const serialize = `
local function ser(...)
  local t = {}
  for i = 1, select('#', ...) do
    local v = select(i, ...)
    t[#t + 1] = type(v) .. ":" .. tostring(v)
  end
  return table.concat(t, "|")
end
local function gm(s, p)
  local t = {}
  for a, b in string.gmatch(s, p) do
    t[#t + 1] = tostring(a) .. "," .. tostring(b)
    if #t > 50 then break end
  end
  return table.concat(t, ";")
end
`

// patternCases are calls whose results must match gopher-lua's own string
// library (reference) on our matcher.
var patternCases = []string{
	`string.find("hello world", "o w")`, `string.find("hello world", "o", 6)`, `string.find("hello", "l+")`,
	`string.find("hello", "^h")`, `string.find("hello", "^e")`, `string.find("hello", "o$")`, `string.find("a$b", "$b")`,
	`string.find("hello", "(l)(l)")`, `string.find("hello", "()ll()")`, `string.find("hello", "x")`,
	`string.find("a.b", ".", 1, true)`, `string.find("a+b", "+", 1, true)`, `string.find("abc", "b", -1)`, `string.find("abc", "b", -2)`,
	`string.find("key = value", "(%w+)%s*=%s*(%w+)")`, `string.find("  trim  ", "^%s*(.-)%s*$")`,
	`string.find("THE (quick) fox", "%((%a+)%)")`, `string.find("f(a(b)c)d", "%b()")`,
	`string.find("abc123def", "[%d]+")`, `string.find("abc-def", "[a-c]+")`, `string.find("a]b", "[]]")`, `string.find("a^b", "[%^]")`,
	`string.find("xyz", "[^x]+")`, `string.find("hello hello", "(h%a+) %1")`, `string.find("aaa", "a-b")`, `string.find("aaab", "a-b")`,
	`string.find("abc", "a?b")`, `string.find("ac", "ab?c")`, `string.find("", "")`, `string.find("abc", ".-")`,
	`string.find("tab\there", "%c")`, `string.find("x_y", "%p")`, `string.find("0xFF", "%x+", 3)`, `string.find("ABC", "%l")`,
	`string.find("ABC", "%L+")`, `string.find("a\0b", "%z")`, `string.find("été", "é")`,
	`string.match("hello world", "%a+")`, `string.match("2026-11-21", "(%d+)-(%d+)-(%d+)")`, `string.match("hello", "()ll()")`,
	`string.match("no digits", "%d+")`, `string.match("  x  ", "^%s*(.-)%s*$")`, `string.match("abc", "b", 3)`, `string.match("abc", ".", -1)`,
	`string.gsub("hello world", "o", "0")`, `string.gsub("hello world", "(%w+)", "<%1>")`, `string.gsub("hello", "", "-")`,
	`string.gsub("abc", "%w", "%0%0")`, `string.gsub("hello world", "%w+", "X", 1)`, `string.gsub("abc", "b", "%%")`,
	`string.gsub("$name is $age", "%$(%w+)", {name = "Ann", age = 7})`, `string.gsub("$x $y", "%$(%w+)", {x = "1"})`,
	`string.gsub("a b c", "%a", function(c) return c:upper() end)`, `string.gsub("a b", "%a", function() return nil end)`,
	`string.gsub("a b", "%a", function() return false end)`, `string.gsub("abc", "^a", "X")`, `string.gsub("aaa", "^a", "X")`,
	`string.gsub("hello", "l*", "-")`, `string.gsub("one two", "(%w+) (%w+)", "%2 %1")`, `string.gsub("x = 1", "()=()", "%1")`,
	`gm("one two three", "(%a+)")`, `gm("k1=v1, k2=v2", "(%w+)=(%w+)")`, `gm("abc", "")`, `gm("a,b,,c", "([^,]*)")`, `gm("hello", "()l")`,
}

// patternErrors must fail, as in Lua (gopher-lua's library accepts some:
// "%", "%b", "%f", a table from a replacement function).
var patternErrors = []string{
	`string.find("a", "%")`, `string.find("a", "[a")`, `string.find("a", "(a")`, `string.find("a", "a)(")`,
	`string.find("a", "%b")`, `string.find("a", "%f")`, `string.find("aa", "(a)%2")`, `string.gsub("a", "a", "%2")`,
	`string.gsub("a", "a", function() return {} end)`, `string.gsub("a", "a")`,
}

// referenceCall runs expr on gopher-lua's own string library. Where that
// library departs from Lua 5.1 and the sandbox follows Lua (string.match
// returns nil, not nothing, when there is no match), the answer is
// normalised; the frontier pattern %f, which it lacks, is not compared.
func referenceCall(t *testing.T, expr string) (string, error) {
	t.Helper()
	L := lua.NewState()
	defer L.Close()
	if err := L.DoString(serialize + "result = ser(" + expr + ")"); err != nil {
		return "", err
	}
	out := L.GetGlobal("result").String()
	if out == "" && strings.HasPrefix(expr, "string.match(") {
		out = "nil:nil"
	}
	// The sandbox's answer comes back as JSON, which replaces invalid
	// UTF-8: do the same here.
	b, _ := json.Marshal(out)
	_ = json.Unmarshal(b, &out)
	return out, nil
}

func sandboxCall(t *testing.T, e *Engine, expr string) (string, error) {
	t.Helper()
	out, err := runScript(t, e, serialize+"function handle() return ser("+expr+") end")
	if err != nil {
		return "", err
	}
	var s string
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("%s: %s is not a JSON string", expr, out)
	}
	return s, nil
}

func TestPatternFunctionsMatchTheReference(t *testing.T) {
	e := New(Options{})
	for _, expr := range patternCases {
		want, err := referenceCall(t, expr)
		if err != nil {
			t.Fatalf("%s: reference: %v", expr, err)
		}
		got, err := sandboxCall(t, e, expr)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		if got != want {
			t.Errorf("%s:\n got %s\nwant %s", expr, got, want)
		}
	}
	for _, expr := range patternErrors {
		if got, err := sandboxCall(t, e, expr); err == nil {
			t.Errorf("%s: accepted, got %s", expr, got)
		}
	}
}

// TestPathologicalPatternsAreStopped: backtracking patterns of high degree
// on long subjects end at the instruction budget or the deadline, in every
// pattern function, and pcall cannot keep them going.
func TestPathologicalPatternsAreStopped(t *testing.T) {
	subject := `string.rep("a", 20000)`
	const pat = `"a-a-a-a-a-a-b"`
	for _, call := range []string{
		fmt.Sprintf("string.find(%s, %s)", subject, pat),
		fmt.Sprintf("string.match(%s, %s)", subject, pat),
		fmt.Sprintf("string.gsub(%s, %s, 'x')", subject, pat),
		fmt.Sprintf("(function() for m in string.gmatch(%s, %s) do end end)()", subject, pat),
		fmt.Sprintf("pcall(string.find, %s, %s); while true do end", subject, pat),
	} {
		for _, lim := range []Limits{{Timeout: time.Hour}, {Instructions: 1 << 62, Timeout: 200 * time.Millisecond}} {
			start := time.Now()
			_, err := runScript(t, New(Options{Limits: lim}), "function handle() "+call+" end")
			if kindOf(err) != script.ErrBudget || time.Since(start) > 10*time.Second {
				t.Errorf("%s with %+v: %v after %s", call, lim, err, time.Since(start))
			}
		}
	}
}

func FuzzPatternFunctions(f *testing.F) {
	for _, s := range []string{"hello world", "a,b,,c", "f(a(b)c)d", "  x  ", "2026-11-21"} {
		for _, p := range []string{"%a+", "(%w+)=(%w+)", "^%s*(.-)%s*$", "%b()", "[^,]*", "()l", "%f[%a]%a+", "a-b", "(.)%1"} {
			f.Add(s, p)
		}
	}
	e := New(Options{})
	f.Fuzz(func(t *testing.T, s, p string) {
		if len(s) > 64 || len(p) > 16 || strings.Contains(p, "%f") {
			return
		}
		for _, fn := range []string{"string.find(%q, %q)", "string.match(%q, %q)", "string.gsub(%q, %q, '<%%0>')", "gm(%q, %q)"} {
			expr := fmt.Sprintf(fn, s, p)
			want, werr := referenceCall(t, expr)
			got, gerr := sandboxCall(t, e, expr)
			if (gerr != nil && werr == nil && malformed(gerr)) || (werr != nil && gerr == nil && malformed(werr)) {
				continue // the libraries differ on malformed patterns, not on matching
			}
			if (werr == nil) != (gerr == nil) || (werr == nil && got != want) {
				t.Fatalf("%s:\n got %q (%v)\nwant %q (%v)", expr, got, gerr, want, werr)
			}
		}
	})
}

// malformed reports the errors of malformed patterns and replacement
// values, where Lua and gopher-lua's library draw the line differently
// (gopher-lua accepts a trailing "%", refuses an unclosed "(" that Lua
// matches).
func malformed(err error) bool {
	for _, msg := range []string{
		"malformed pattern", "missing", "invalid capture index", "invalid pattern capture", "unfinished capture", "invalid replacement value",
		"invalid ')'", "invalid ']'", "invalid %", "can not be nested", "unexpected EOS", // gopher-lua's words
		"runtime error", // gopher-lua's matcher crashing on back-references to position captures
	} {
		if strings.Contains(err.Error(), msg) {
			return true
		}
	}
	return false
}
