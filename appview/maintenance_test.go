package appview_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/sqlite"
	"github.com/lexview/lexview/storage/storagetest"
)

var maintenanceNow = time.Date(2026, 7, 8, 9, 10, 11, 0, time.UTC)

func fixedNow() time.Time { return maintenanceNow }

func freelist(t *testing.T, s *sqlite.Store) int64 {
	t.Helper()
	var n int64
	if err := s.Writer().QueryRowContext(context.Background(), "PRAGMA freelist_count").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestScheduledVacuumRunsAtRestart arms the vacuum through the admin API and
// checks that the next appview.New on the same SQLite file runs it, disarms
// it and records when it ran.
func TestScheduledVacuumRunsAtRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "vac.db")
	s1, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s1.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	env := testenv.New(t, s1, appview.Config{Now: fixedNow})
	su := env.Bootstrap(t)

	// Leave free pages behind: write records, then delete them.
	var puts, dels []storage.RecordOp
	for i := range 2000 {
		rec := storagetest.Rec("did:plc:vacuum", "app.test.post", fmt.Sprintf("r%05d", i), maintenanceNow,
			map[string]any{"text": fmt.Sprintf("%0200d", i)})
		puts = append(puts, storage.RecordOp{Record: rec})
		dels = append(dels, storage.RecordOp{Delete: true, Record: storage.Record{URI: rec.URI}})
	}
	if err := s1.ApplyBatch(ctx, storage.Batch{Ops: puts}); err != nil {
		t.Fatal(err)
	}
	if err := s1.ApplyBatch(ctx, storage.Batch{Ops: dels}); err != nil {
		t.Fatal(err)
	}
	if freelist(t, s1) == 0 {
		t.Fatal("no free pages to reclaim")
	}
	if r := su.Do(t, "POST", "/admin/database/vacuum/schedule", nil); r.Status != 200 {
		t.Fatalf("schedule: %d %s", r.Status, r.Raw)
	}
	if freelist(t, s1) == 0 {
		t.Fatal("scheduling vacuumed at once")
	}
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}

	// Restart: a second instance on the same file, with the same PLC stand-in
	// so the super user can still call the admin API.
	s2, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s2.Close() })
	if err := s2.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	env2 := testenv.New(t, s2, appview.Config{Now: fixedNow, Network: appview.NetworkConfig{PLCURL: env.PLC.URL}})
	if n := freelist(t, s2); n != 0 {
		t.Fatalf("free pages after the vacuum: %d", n)
	}
	if _, err := s2.GetSetting(ctx, "database.vacuum_scheduled"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("vacuum still armed: %v", err)
	}
	if v, err := s2.GetSetting(ctx, "database.vacuum_last_run_at"); err != nil || v != "2026-07-08T09:10:11Z" {
		t.Fatalf("last run: %q, %v", v, err)
	}
	if ev, _, _ := s2.ListEvents(ctx, storage.EventFilter{Type: "database.vacuumed", Limit: 10}); len(ev) != 1 {
		t.Fatalf("database.vacuumed events: %+v", ev)
	}
	var st struct {
		Vacuum struct {
			Supported bool    `json:"supported"`
			Scheduled bool    `json:"scheduled"`
			LastRunAt *string `json:"last_run_at"`
		} `json:"vacuum"`
	}
	r := env2.Do(t, "GET", "/admin/database/status", nil, testenv.Bearer(su.Account.ServiceAuth(t))...)
	if r.Status != 200 {
		t.Fatalf("status: %d %s", r.Status, r.Raw)
	}
	r.JSON(t, &st)
	if !st.Vacuum.Supported || st.Vacuum.Scheduled || st.Vacuum.LastRunAt == nil || *st.Vacuum.LastRunAt != "2026-07-08T09:10:11.000Z" {
		t.Fatalf("status after restart: %s", r.Raw)
	}

	// A third start has nothing to do.
	app3, err := appview.New(appview.Config{
		DatabaseURL: "sqlite://" + path,
		Logger:      quiet,
		Ingest:      appview.IngestConfig{JetstreamURL: "off"},
		Now:         func() time.Time { return maintenanceNow.Add(time.Hour) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer app3.Shutdown(ctx)
	if v, _ := app3.Store().GetSetting(ctx, "database.vacuum_last_run_at"); v != "2026-07-08T09:10:11Z" {
		t.Fatalf("vacuum ran again: last run %q", v)
	}
}

// TestVacuumSettingIgnoredOnPostgres: a vacuum flag stored by other means
// does nothing on PostgreSQL.
func TestVacuumSettingIgnoredOnPostgres(t *testing.T) {
	t.Parallel()
	s := storagetest.Postgres(t)
	ctx := context.Background()
	if err := s.PutSetting(ctx, "database.vacuum_scheduled", "true"); err != nil {
		t.Fatal(err)
	}
	app, err := appview.New(appview.Config{
		Store:    s,
		Logger:   quiet,
		Ingest:   appview.IngestConfig{JetstreamURL: "off"},
		Security: appview.SecurityConfig{TokenEncryptionKey: testenv.TokenKey},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Shutdown(ctx)
	if v, err := s.GetSetting(ctx, "database.vacuum_scheduled"); err != nil || v != "true" {
		t.Fatalf("setting touched: %q, %v", v, err)
	}
	if _, err := s.GetSetting(ctx, "database.vacuum_last_run_at"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a vacuum was recorded on PostgreSQL: %v", err)
	}
}

// TestEventLogPurgeWorker checks that Start purges the event log by
// EventLogRetentionDays, and keeps everything when it is negative.
func TestEventLogPurgeWorker(t *testing.T) {
	t.Parallel()
	const day = 24 * time.Hour
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		for _, tc := range []struct {
			days int
			want []string
		}{
			{30, []string{"test.now", "test.10d"}},
			{5, []string{"test.now"}},
			{-1, []string{"test.now", "test.10d", "test.40d"}},
		} {
			t.Run(fmt.Sprint(tc.days, "days"), func(t *testing.T) {
				s := open(t)
				ctx := context.Background()
				if err := s.AppendEvents(ctx, []storage.Event{
					{Type: "test.40d", Severity: "info", CreatedAt: maintenanceNow.Add(-40 * day)},
					{Type: "test.10d", Severity: "info", CreatedAt: maintenanceNow.Add(-10 * day)},
					{Type: "test.now", Severity: "info", CreatedAt: maintenanceNow},
				}); err != nil {
					t.Fatal(err)
				}
				app, err := appview.New(appview.Config{
					Store:                 s,
					Logger:                quiet,
					Ingest:                appview.IngestConfig{JetstreamURL: "off"},
					Security:              appview.SecurityConfig{TokenEncryptionKey: testenv.TokenKey},
					Now:                   fixedNow,
					EventLogRetentionDays: tc.days,
				})
				if err != nil {
					t.Fatal(err)
				}
				if err := app.Start(ctx); err != nil {
					t.Fatal(err)
				}
				defer app.Shutdown(ctx)
				var got []string
				deadline := time.Now().Add(60 * time.Second)
				settle := time.Now().Add(300 * time.Millisecond) // time for a purge that must not happen
				for {
					events, _, err := s.ListEvents(ctx, storage.EventFilter{Category: "test", Limit: 10})
					if err != nil {
						t.Fatal(err)
					}
					got = got[:0]
					for _, e := range events {
						got = append(got, e.Type)
					}
					if slices.Equal(got, tc.want) && time.Now().After(settle) || time.Now().After(deadline) {
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
				if !slices.Equal(got, tc.want) {
					t.Fatalf("retention %d days kept %v, want %v", tc.days, got, tc.want)
				}
			})
		}
	})
}
