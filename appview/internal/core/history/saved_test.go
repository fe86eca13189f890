package history

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// TestSaveRestore: the day window is handed to Options.Save at each of
// its new points; what was saved, through JSON (null for no value),
// restores the window's points in another History (a restart), but for
// the points older than a day; a window already sampled is left alone.
func TestSaveRestore(t *testing.T) {
	f := &fake{now: t0, r: Reading{Leading: true, Sources: []Source{{Name: "jetstream", State: Connected}}}}
	var saves []Saved
	h := New(Options{Read: func(context.Context) Reading { return clone(f.r) }, Now: func() time.Time { return f.now },
		Save: func(_ context.Context, s Saved) { saves = append(saves, s) }})
	for i := range 2*DayEvery + 1 {
		f.r.Sources[0].Events = int64(i * 30) // 3/s
		f.sample(h, 10*time.Second)
	}
	if len(saves) != 3 || len(saves[2].Times) != 3 {
		t.Fatalf("%d saves, the last of %d points; want 3 of 3", len(saves), len(saves[len(saves)-1].Times))
	}
	raw, err := json.Marshal(saves[2])
	if err != nil {
		t.Fatal(err)
	}
	var stored Saved
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}

	restart := func(at time.Time) *History {
		f2 := &fake{now: at}
		h2 := New(Options{Read: func(context.Context) Reading { return clone(f2.r) }, Now: func() time.Time { return f2.now }})
		h2.Restore(stored)
		return h2
	}
	want, _ := h.Window(Day)
	again := restart(f.now.Add(time.Hour))
	got, _ := again.Window(Day)
	if !same(values(t, again, Day, EventsPerSecond, "jetstream"), []float64{nan, 3, 3}) || len(got.Times) != 3 || got.Times[2] != want.Times[2] {
		t.Errorf("restored an hour later: %v at %v; want %v", got.Series[EventsPerSecond], got.Times, want.Times)
	}
	if _, ok := got.Series[WriterQueue]["queued"]; !ok {
		t.Errorf("restored without the writer's queue: %v", got.Series)
	}
	// A day after the first point: it is out of the window.
	late := restart(time.UnixMilli(want.Times[0]).Add(24*time.Hour + time.Second))
	if got := values(t, late, Day, EventsPerSecond, "jetstream"); !same(got, []float64{3, 3}) {
		t.Errorf("restored a day later: %v", got)
	}
	// Not over points already sampled.
	h.Restore(Saved{Times: []int64{f.now.UnixMilli()}, Series: map[string]map[string][]Value{EventsPerSecond: {"x": {1}}}})
	if got := values(t, h, Day, EventsPerSecond, "x"); got != nil {
		t.Errorf("restored over a sampled window: %v", got)
	}
}
