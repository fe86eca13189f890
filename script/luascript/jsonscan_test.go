package luascript

import (
	"testing"
)

// BenchmarkSpliceable measures the check of a typical stored record.
func BenchmarkSpliceable(b *testing.B) {
	raw := []byte(`{"$type":"app.bench.feed.post","createdAt":"2026-01-01T00:00:00.048Z","langs":["en"],` +
		`"text":"Spent the morning rewiring the garden irrigation controller. Turns out the valve timings were off by an hour ` +
		`since the clocks changed, which explains the swampy tomatoes. Fixed now, hopefully for good. #48 caf\u00e9 \"quoted\""}`)
	var sc scanner
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, _, _, ok := sc.spliceable(raw); !ok {
			b.Fatal("not spliceable")
		}
	}
}
