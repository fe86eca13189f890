package instance_test

import (
	"context"
	"testing"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

type dbStatus struct {
	Dialect       string `json:"dialect"`
	SizeBytes     int64  `json:"size_bytes"`
	WALSizeBytes  int64  `json:"wal_size_bytes"`
	FreeDiskBytes *int64 `json:"free_disk_bytes"`
	Vacuum        struct {
		Supported bool    `json:"supported"`
		Scheduled bool    `json:"scheduled"`
		LastRunAt *string `json:"last_run_at"`
	} `json:"vacuum"`
}

func TestDatabaseInfoAndStatus(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env, su := start(t, open)
		sqlite := env.Store.Dialect() == "sqlite"

		var info struct {
			Dialect       string `json:"dialect"`
			Version       string `json:"version"`
			Location      string `json:"location"`
			SizeBytes     int64  `json:"size_bytes"`
			WALSizeBytes  int64  `json:"wal_size_bytes"`
			FreeDiskBytes *int64 `json:"free_disk_bytes"`
		}
		r := su.Do(t, "GET", "/admin/settings/db-info", nil)
		if r.Status != 200 {
			t.Fatalf("db-info: %d %s", r.Status, r.Raw)
		}
		r.JSON(t, &info)
		if info.Dialect != env.Store.Dialect() || info.Version == "" || info.Location == "" || info.SizeBytes <= 0 ||
			(info.FreeDiskBytes != nil) != sqlite {
			t.Fatalf("db-info: %s", r.Raw)
		}

		var st dbStatus
		r = su.Do(t, "GET", "/admin/database/status", nil)
		if r.Status != 200 {
			t.Fatalf("status: %d %s", r.Status, r.Raw)
		}
		r.JSON(t, &st)
		if st.Dialect != env.Store.Dialect() || st.SizeBytes <= 0 || st.Vacuum.Supported != sqlite || st.Vacuum.Scheduled ||
			st.Vacuum.LastRunAt != nil || (st.FreeDiskBytes != nil) != sqlite {
			t.Fatalf("status: %s", r.Raw)
		}
	})
}

func TestVacuumSchedule(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env, su := start(t, open)
		ctx := context.Background()
		if env.Store.Dialect() == "postgres" {
			for _, method := range []string{"POST", "DELETE"} {
				r := su.Do(t, method, "/admin/database/vacuum/schedule", nil)
				if r.Status != 400 || r.Error(t) != "vacuum scheduling is only available on SQLite" {
					t.Fatalf("%s on PostgreSQL: %d %s", method, r.Status, r.Raw)
				}
			}
			if _, err := env.Store.GetSetting(ctx, "database.vacuum_scheduled"); err == nil {
				t.Fatal("vacuum armed on PostgreSQL")
			}
			return
		}
		status := func() dbStatus {
			var st dbStatus
			su.Do(t, "GET", "/admin/database/status", nil).JSON(t, &st)
			return st
		}
		r := su.Do(t, "POST", "/admin/database/vacuum/schedule", nil)
		if r.Status != 200 || string(r.Raw) != `{"scheduled":true}` {
			t.Fatalf("schedule: %d %s", r.Status, r.Raw)
		}
		if v, err := env.Store.GetSetting(ctx, "database.vacuum_scheduled"); err != nil || v != "true" {
			t.Fatalf("setting: %q, %v", v, err)
		}
		if st := status(); !st.Vacuum.Scheduled || !st.Vacuum.Supported {
			t.Fatalf("status after schedule: %+v", st)
		}
		// Scheduling twice is harmless.
		if r := su.Do(t, "POST", "/admin/database/vacuum/schedule", nil); r.Status != 200 {
			t.Fatalf("schedule again: %d %s", r.Status, r.Raw)
		}
		for range 2 {
			r = su.Do(t, "DELETE", "/admin/database/vacuum/schedule", nil)
			if r.Status != 200 || string(r.Raw) != `{"scheduled":false}` {
				t.Fatalf("unschedule: %d %s", r.Status, r.Raw)
			}
		}
		if st := status(); st.Vacuum.Scheduled {
			t.Fatalf("status after unschedule: %+v", st)
		}
		if ev := audited(t, env.Store, "database.vacuum_scheduled"); len(ev) != 2 || ev[0].ActorDID != su.Account.DID.String() {
			t.Fatalf("database.vacuum_scheduled: %+v", ev)
		}
		if ev := audited(t, env.Store, "database.vacuum_unscheduled"); len(ev) != 2 {
			t.Fatalf("database.vacuum_unscheduled: %+v", ev)
		}
	})
}

func TestFeatureFlags(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env, su := start(t, open) // testenv turns Jetstream off
		var body struct {
			Flags map[string]bool `json:"flags"`
		}
		r := su.Do(t, "GET", "/admin/feature-flags", nil)
		if r.Status != 200 {
			t.Fatalf("flags: %d %s", r.Status, r.Raw)
		}
		r.JSON(t, &body)
		sqlite := env.Store.Dialect() == "sqlite"
		want := map[string]bool{"jetstream": false, "metrics": false, "token_encryption": true, "sqlite_vacuum": sqlite}
		for name, v := range want {
			if got, ok := body.Flags[name]; !ok || got != v {
				t.Errorf("flag %s = %v (present %v), want %v: %s", name, got, ok, v, r.Raw)
			}
		}

		env = testenv.New(t, open(t), appview.Config{
			Ingest:  appview.IngestConfig{JetstreamURL: "wss://jetstream.invalid/subscribe"},
			Metrics: appview.MetricsConfig{Addr: "127.0.0.1:0"},
		})
		su = env.Bootstrap(t)
		su.Do(t, "GET", "/admin/feature-flags", nil).JSON(t, &body)
		if !body.Flags["jetstream"] || !body.Flags["metrics"] {
			t.Fatalf("configured flags: %v", body.Flags)
		}
	})
}
