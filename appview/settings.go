package appview

import (
	"context"
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
	return a.svc.Instance.Setting(ctx, key, envDefault)
}
