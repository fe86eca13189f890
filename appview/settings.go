package appview

import (
	"context"
	"errors"
	"time"

	"github.com/lexview/lexview/appview/internal/admin/operator"
	"github.com/lexview/lexview/appview/internal/eventlog"
	"github.com/lexview/lexview/storage"
)

// Setting resolves an instance setting: the value stored through the admin
// API (PUT /admin/settings/{key}) overrides envDefault, the value the
// environment variable or Config supplies. A read failure is logged and
// falls back to envDefault.
//
// Known keys:
//   - app_name: the instance's display name
//   - terms_of_service_url: link to the terms of service
//   - privacy_policy_url: link to the privacy policy
//   - database.vacuum_scheduled, database.vacuum_last_run_at: the one-time
//     SQLite vacuum (managed by the admin API, not meant for Setting)
//
// The logo is a blob, not a setting (SettingsStore.GetBlob("logo")).
func (a *App) Setting(ctx context.Context, key, envDefault string) string {
	v, err := a.store.GetSetting(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return envDefault
	}
	if err != nil {
		a.log.WarnContext(ctx, "reading setting failed; using the environment value", "key", key, "err", err)
		return envDefault
	}
	return v
}

// vacuumer is implemented by backends that can rebuild their database
// file (SQLite).
type vacuumer interface {
	Vacuum(ctx context.Context) error
}

// runScheduledVacuum runs the one-time SQLite vacuum armed through POST
// /admin/database/vacuum/schedule, then disarms it and records when it ran.
// A failure is logged and recorded in the event log; it does not stop the
// instance, and the vacuum is disarmed either way so a failing vacuum does
// not repeat at every start.
func (a *App) runScheduledVacuum(ctx context.Context) error {
	if a.store.Dialect() != "sqlite" {
		return nil
	}
	v, err := a.store.GetSetting(ctx, operator.VacuumScheduledSetting)
	if errors.Is(err, storage.ErrNotFound) || err == nil && v != "true" {
		return nil
	}
	if err != nil {
		return err
	}
	vac, ok := a.store.(vacuumer)
	if !ok {
		a.log.Warn("a vacuum is scheduled but the store cannot vacuum")
		return nil
	}
	start := time.Now()
	a.log.Info("running the scheduled database vacuum")
	// The vacuum may outlast New's start-up deadline: it is bounded only by
	// its own completion.
	vacErr := vac.Vacuum(context.WithoutCancel(ctx))
	if err := a.store.DeleteSetting(ctx, operator.VacuumScheduledSetting); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	took := time.Since(start)
	if vacErr != nil {
		a.log.Error("scheduled database vacuum failed", "err", vacErr)
		a.events.Record(ctx, eventlog.Entry{Type: "database.vacuum_failed", Severity: eventlog.Error,
			Detail: map[string]any{"error": vacErr.Error()}})
		return nil
	}
	if err := a.store.PutSetting(ctx, operator.VacuumLastRunSetting, a.cfg.Now().UTC().Format(time.RFC3339)); err != nil {
		return err
	}
	a.log.Info("scheduled database vacuum done", "took", took)
	a.events.Record(ctx, eventlog.Entry{Type: "database.vacuumed", Detail: map[string]any{"duration_ms": took.Milliseconds()}})
	return nil
}
