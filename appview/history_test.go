package appview_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestHistoryDaySurvivesRestart: the leading instance stores the day
// window of its history at each of its points, and an instance started
// on the same database restores it: its day window begins before it
// started, while its hour window starts empty.
func TestHistoryDaySurvivesRestart(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		first := testenv.New(t, store, appview.Config{Metrics: appview.MetricsConfig{HistoryInterval: 10 * time.Millisecond}})
		deadline := time.Now().Add(time.Minute)
		for {
			b, err := store.GetBlob(context.Background(), "history.day")
			var s struct{ Times []int64 }
			if err == nil && json.Unmarshal(b.Data, &s) == nil && len(s.Times) >= 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no day window of 2 points stored: %v", err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := first.App.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		started := time.Now()
		again := testenv.New(t, store, appview.Config{Metrics: appview.MetricsConfig{HistoryInterval: time.Hour}})
		su := again.Bootstrap(t)
		window := func(name string) []int64 {
			r := su.Do(t, "GET", "/admin/stats/history?window="+name, nil)
			var w struct{ Times []int64 }
			if r.Status != 200 || json.Unmarshal(r.Raw, &w) != nil {
				t.Fatalf("%s window: %d %s", name, r.Status, r.Raw)
			}
			return w.Times
		}
		// The instance's first sample is taken as it starts, beside the
		// request: wait for it in the hour window.
		for deadline := time.Now().Add(30 * time.Second); len(window("hour")) == 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("no first sample in the hour window")
			}
		}
		if hour := window("hour"); len(hour) != 1 {
			t.Errorf("hour window after the restart: %v, want its first sample only", hour)
		}
		if day := window("day"); len(day) < 3 || day[0] >= started.UnixMilli() {
			t.Errorf("day window after the restart: %v (started at %d), want the stored points and the first sample", day, started.UnixMilli())
		}
	})
}
