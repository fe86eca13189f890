package instance_test

import (
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// historyWindow is GET /admin/stats/history's answer, as far as the test
// reads it.
type historyWindow struct {
	Window          string                           `json:"window"`
	IntervalSeconds float64                          `json:"interval_seconds"`
	Times           []int64                          `json:"times"`
	Series          map[string]map[string][]*float64 `json:"series"`
	Backfill        *struct{ ID string }             `json:"backfill"`
	Health          struct {
		Status string
		Parts  []struct{ Name, Status, Message string }
	} `json:"health"`
}

// TestStatsHistory: GET /admin/stats/history answers the hour window (the
// default) or the day window of the sampled figures with the health, an
// XRPC call shows in the calls per second of its method, another window
// is refused; GET /admin/stats/health answers the health alone; both
// need stats:read.
func TestStatsHistory(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{Metrics: appview.MetricsConfig{HistoryInterval: 50 * time.Millisecond}})
		su := env.Bootstrap(t)
		if r := su.Do(t, "POST", "/admin/lexicons", map[string]any{"lexicon_json": `{"lexicon":1,"id":"app.test.ping","defs":{"main":{"type":"query"}}}`}); r.Status != 201 {
			t.Fatalf("upload: %d %s", r.Status, r.Raw)
		}
		env.Do(t, "GET", "/xrpc/app.test.ping", nil)

		var w historyWindow
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			r := su.Do(t, "GET", "/admin/stats/history", nil)
			if r.Status != 200 {
				t.Fatalf("history: %d %s", r.Status, r.Raw)
			}
			w = historyWindow{}
			r.JSON(t, &w)
			if calls(w, "app.test.ping") > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the call never showed in the history: %s", r.Raw)
			}
		}
		if w.Window != "hour" || w.IntervalSeconds != .05 || len(w.Times) < 2 || w.Backfill != nil {
			t.Errorf("hour window: %+v", w)
		}
		if calls(w, "all") <= 0 || len(w.Series["database_ping_ms"]["ping"]) != len(w.Times) {
			t.Errorf("series: %v", w.Series)
		}
		if w.Health.Status != "ok" || len(w.Health.Parts) != 3 || w.Health.Parts[0].Status != "off" || w.Health.Parts[2].Name != "database" {
			t.Errorf("health: %+v", w.Health)
		}

		var day historyWindow
		if r := su.Do(t, "GET", "/admin/stats/history?window=day", nil); r.Status != 200 {
			t.Fatalf("day: %d %s", r.Status, r.Raw)
		} else if r.JSON(t, &day); day.Window != "day" || day.IntervalSeconds != 1.5 || len(day.Times) == 0 {
			t.Errorf("day window: %+v", day)
		}
		if r := su.Do(t, "GET", "/admin/stats/history?window=week", nil); r.Status != 400 || r.Error(t) != `window must be "hour" or "day"` {
			t.Errorf("week: %d %s", r.Status, r.Raw)
		}
		r := su.Do(t, "GET", "/admin/stats/health", nil)
		health := r.Object(t)
		if r.Status != 200 || health["status"] != "ok" || len(health["parts"].([]any)) != 3 || health["checked_at"] == nil {
			t.Errorf("health: %d %s", r.Status, r.Raw)
		}

		reader, other := env.AddAdmin(t, admins.StatsRead), env.AddAdmin(t, admins.LexiconsRead)
		for _, path := range []string{"/admin/stats/history", "/admin/stats/health"} {
			if r := reader.Do(t, "GET", path, nil); r.Status != 200 {
				t.Errorf("%s with stats:read: %d %s", path, r.Status, r.Raw)
			}
			if r := other.Do(t, "GET", path, nil); r.Status != 403 {
				t.Errorf("%s without stats:read: %d %s", path, r.Status, r.Raw)
			}
		}
	})
}

// calls is the highest calls per second of method in w.
func calls(w historyWindow, method string) float64 {
	top := 0.0
	for _, v := range w.Series["xrpc_calls_per_second"][method] {
		if v != nil && *v > top {
			top = *v
		}
	}
	return top
}
