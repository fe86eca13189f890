package main

import (
	"bytes"
	"testing"

	"github.com/lexview/lexview/internal/jetstreamtest"
)

// TestCloneAndStream: a clone continues the stream exactly as its origin
// would, without advancing it, and a stream read in uneven steps (its
// buffers reused) yields the same events as generate.
func TestCloneAndStream(t *testing.T) {
	g := newGenerator(7, 50)
	g.generate(3000, nil) // past the first 1000 records: updates and deletes too
	c1, c2 := g.clone(), g.clone()
	s := &stream{g: c2}
	var streamed []jetstreamtest.Event
	for _, n := range []int{1, 7, 0, 500, 1492} {
		streamed = append(streamed, copyEvents(s.take(n))...)
	}
	want := g.generate(2000, nil) // after the clone's stream was read
	if got := c1.generate(2000, nil); !sameEvents(got, want) {
		t.Fatal("a clone generated other events than its origin")
	}
	if !sameEvents(streamed, want) {
		t.Fatal("the stream generated other events than generate, or reading it advanced the origin")
	}
}

func copyEvents(in []jetstreamtest.Event) []jetstreamtest.Event {
	out := make([]jetstreamtest.Event, len(in))
	for i, e := range in {
		out[i] = jetstreamtest.Event{Collection: e.Collection, JSON: bytes.Clone(e.JSON)}
	}
	return out
}

func sameEvents(a, b []jetstreamtest.Event) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Collection != b[i].Collection || !bytes.Equal(a[i].JSON, b[i].JSON) {
			return false
		}
	}
	return true
}
