package postgres

import (
	"strings"
	"testing"

	"github.com/lib/pq"
)

// literals returns a's text[] literal as textArray writes it from strings
// and from byte slices; both must be the same.
func literal(t testing.TB, a []string) string {
	t.Helper()
	bs := make([][]byte, len(a))
	for i, s := range a {
		bs[i] = []byte(s)
	}
	fromStrings, err := textArray[string](a).Value()
	if err != nil {
		t.Fatal(err)
	}
	fromBytes, err := textArray[[]byte](bs).Value()
	if err != nil {
		t.Fatal(err)
	}
	if string(fromStrings.([]byte)) != string(fromBytes.([]byte)) {
		t.Fatalf("%q: from strings %s, from bytes %s", a, fromStrings, fromBytes)
	}
	return string(fromStrings.([]byte))
}

// TestTextArrayMatchesPQ: the literal is pq.StringArray's, byte for byte.
func TestTextArrayMatchesPQ(t *testing.T) {
	for _, a := range [][]string{
		{},
		{""},
		{"plain", "NULL", "with space", "a,b", "{braces}", "é ü 🙂"},
		{`"`, `\`, `\"`, `"\"`, `end\`, `{"text":"say \"hi\"","path":"C:\\dir"}`},
		{strings.Repeat(`ab"c\`, 1000), "x"},
	} {
		want, err := pq.StringArray(a).Value()
		if err != nil {
			t.Fatal(err)
		}
		if got := literal(t, a); got != want.(string) {
			t.Errorf("%q: %s, want %s", a, got, want)
		}
	}
}

func FuzzTextArray(f *testing.F) {
	f.Add("a", `b"c`, `d\e`)
	f.Fuzz(func(t *testing.T, x, y, z string) {
		a := []string{x, y, z}
		want, _ := pq.StringArray(a).Value()
		if got := literal(t, a); got != want.(string) {
			t.Fatalf("%q: %s, want %s", a, got, want)
		}
	})
}

// BenchmarkTextArray: a batch of 1,000 post-sized JSON records as a text[]
// literal.
func BenchmarkTextArray(b *testing.B) {
	rec := `{"$type":"app.bench.post","createdAt":"2025-06-01T12:00:00.000Z","langs":["en"],"link":{"title":"An older post","uri":"https://example.com/a"},"text":"` +
		strings.Repeat("lorem ipsum ", 30) + `"}`
	a := make([]string, 1000)
	for i := range a {
		a[i] = rec
	}
	for name, fn := range map[string]func() (any, error){
		"textArray":      func() (any, error) { return textArray[string](a).Value() },
		"pq.StringArray": func() (any, error) { return pq.StringArray(a).Value() },
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(rec) * len(a)))
			for b.Loop() {
				if _, err := fn(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
