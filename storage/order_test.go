package storage

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"
)

func TestCreationTimeOfTIDKeys(t *testing.T) {
	indexed := time.Date(2250, 1, 1, 0, 0, 0, 0, time.UTC) // later than any key below (53 bits of µs: 2255)
	rng := rand.New(rand.NewPCG(3, 4))
	for range 10000 {
		micros := rng.Int64N(indexed.UnixMicro())
		tid := syntax.NewTID(micros, uint(rng.IntN(1024)))
		got := CreationTime(tid.String(), json.RawMessage(`{"createdAt":"2001-01-01T00:00:00Z"}`), indexed)
		if got.UnixMicro() != micros || !got.Equal(tid.Time()) || got.Location() != time.UTC {
			t.Fatalf("%s: %v, want %d µs", tid, got, micros)
		}
	}
	// Not TIDs: too short or long, a first character beyond 'j', a
	// character outside the alphabet.
	for _, k := range []string{"3kabcdefghij", "3kabcdefghijkl", "kkkkkkkkkkkkk", "3kabcdefghij1", "3KABCDEFGHIJK"} {
		if got := CreationTime(k, json.RawMessage(`{}`), indexed); !got.Equal(indexed) {
			t.Errorf("%s taken for a TID: %v", k, got)
		}
	}
}

func TestCreationTimeOfCreatedAt(t *testing.T) {
	indexed := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := time.Date(2025, 2, 3, 4, 5, 6, 789012000, time.UTC)
	cases := map[string]time.Time{
		`{"createdAt":"2025-02-03T04:05:06.789012Z"}`:                            at,
		`{"createdAt":"2025-02-03T04:05:06.789012345Z"}`:                         at, // to the microsecond
		`{"createdAt":"2025-02-03T06:05:06.789012+02:00"}`:                       at,
		`{"createdAt":"2025-02-03T04:05:06.789012"}`:                             at, // lenient: UTC
		`{"createdAt":"2025-02-03T04:05:06.789012+0000"}`:                        at,
		`{"text":"x","createdAt":"2025-02-03T04:05:06.789012Z","n":[1,{"a":2}]}`: at,
		`{"createdAt":"2027-01-01T00:00:00Z"}`:                                   indexed, // never later than indexed
		`{"createdAt":"2025-02-03"}`:                                             indexed,
		`{"createdAt":"2025-02-30T00:00:00Z"}`:                                   indexed,
		`{"createdAt":1738555506}`:                                               indexed,
		`{"createdAt":null}`:                                                     indexed,
		`{"CreatedAt":"2025-02-03T04:05:06.789012Z"}`:                            indexed,
		`{"reply":{"createdAt":"2025-02-03T04:05:06.789012Z"}}`:                  indexed,
		`["createdAt","2025-02-03T04:05:06.789012Z"]`:                            indexed,
		`not json`: indexed,
		``:         indexed,
	}
	for value, want := range cases {
		if got := CreationTime("self", json.RawMessage(value), indexed); !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("%s: %v, want %v", value, got, want)
		}
	}
	// The indexing time itself is taken to the microsecond.
	fine := time.Date(2026, 1, 1, 0, 0, 0, 123456789, time.FixedZone("x", 3600))
	if got := CreationTime("self", nil, fine); !got.Equal(fine.Truncate(time.Microsecond)) || got.Location() != time.UTC {
		t.Errorf("indexing time: %v", got)
	}
}

func FuzzCreationTime(f *testing.F) {
	f.Add("3kabcdefghij2", `{"createdAt":"2025-02-03T04:05:06Z"}`)
	f.Add("self", `{"createdAt":"2025-02-03T04:05:06"}`)
	f.Add("self", `{"createdAt":"0000-01-01T00:00:00Z"}`)
	indexed := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, rkey, value string) {
		got := CreationTime(rkey, json.RawMessage(value), indexed)
		if got.After(indexed) || got.Location() != time.UTC || got.Nanosecond()%1000 != 0 {
			t.Fatalf("%q %q: %v", rkey, value, got)
		}
		if again := CreationTime(rkey, json.RawMessage(value), indexed); !again.Equal(got) {
			t.Fatalf("not a function of its arguments: %v then %v", got, again)
		}
	})
}

// BenchmarkCreationTime: the work each record write adds (a TID key; a
// key that is not one, with createdAt in a post-sized record).
func BenchmarkCreationTime(b *testing.B) {
	indexed := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	value := json.RawMessage(`{"$type":"app.bsky.feed.post","createdAt":"2025-06-01T12:00:00.000Z","langs":["en"],"text":"` +
		"Spent the morning rewiring the garden irrigation controller. Turns out the valve timings were off by an hour since the clocks changed." + `"}`)
	for _, k := range []string{"3kabcdefghij2", "self"} {
		b.Run(k, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				CreationTime(k, value, indexed)
			}
		})
	}
}
