package main

import (
	"testing"
	"time"
)

// TestCurve: crossings between readings are interpolated, several in one
// reading are all recorded, and the last stretch ends at the total.
func TestCurve(t *testing.T) {
	t0 := time.Unix(0, 0)
	c := newCurve(100, 250, t0)
	c.observe(0, t0.Add(time.Second))
	c.observe(50, t0.Add(2*time.Second))  // 50/s from the start... (0 done at 1 s)
	c.observe(250, t0.Add(3*time.Second)) // 200 in the last second: crosses 100, 200 and 250
	want := []curvePoint{{0, 100, 100 / 2.25}, {100, 200, 200}, {200, 250, 200}}
	if len(c.points) != len(want) {
		t.Fatalf("points %v, want %v", c.points, want)
	}
	for i, p := range c.points {
		if p.from != want[i].from || p.to != want[i].to || p.rate < want[i].rate*0.999 || p.rate > want[i].rate*1.001 {
			t.Fatalf("point %d: %+v, want %+v", i, p, want[i])
		}
	}
	c.observe(300, t0.Add(4*time.Second))
	if len(c.points) != 3 {
		t.Fatalf("a reading past the total added points: %v", c.points)
	}
}
