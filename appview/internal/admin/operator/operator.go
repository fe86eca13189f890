// Package operator serves the admin endpoints for running an instance:
// record statistics, browsing and deleting indexed records, instance
// settings and the logo, database status and the one-time SQLite vacuum,
// and feature flags.
package operator

import (
	"github.com/lexview/lexview/appview/internal/admin"
)

// Mount registers the operator endpoints.
func Mount(m *admin.Mux, d admin.Deps) {
	h := handlers{d}
	m.Handle("GET /admin/stats", h.stats)
	m.Handle("GET /admin/feature-flags", h.featureFlags)

	m.Handle("GET /admin/records", h.listRecords)
	m.Handle("GET /admin/records/collections", h.collections)
	m.Handle("DELETE /admin/records", h.deleteRecords)
	m.Handle("DELETE /admin/records/collection", h.deleteCollection)

	m.Handle("GET /admin/settings", h.listSettings)
	// The literal logo routes are more specific than {key}, so net/http
	// routes /admin/settings/logo to them.
	m.Handle("PUT /admin/settings/{key}", h.putSetting)
	m.Handle("DELETE /admin/settings/{key}", h.deleteSetting)
	m.Handle("PUT /admin/settings/logo", h.putLogo)
	m.Handle("DELETE /admin/settings/logo", h.deleteLogo)

	m.Handle("GET /admin/settings/db-info", h.dbInfo)
	m.Handle("GET /admin/database/status", h.databaseStatus)
	m.Handle("POST /admin/database/vacuum/schedule", h.scheduleVacuum)
	m.Handle("DELETE /admin/database/vacuum/schedule", h.unscheduleVacuum)
}

type handlers struct{ admin.Deps }

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
