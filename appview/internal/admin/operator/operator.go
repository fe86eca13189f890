// Package operator serves the admin endpoints for running an instance:
// record statistics, browsing and deleting indexed records, instance
// settings and the logo, database status and the one-time SQLite vacuum,
// and feature flags.
package operator

import (
	"github.com/lexview/lexview/appview/internal/admin"
	"github.com/lexview/lexview/appview/internal/instance"
)

// Mount registers the operator endpoints.
func Mount(m *admin.Mux, d admin.Deps, svc *instance.Service) {
	h := handlers{Deps: d, instance: svc}
	m.HandleFunc("GET /admin/stats", h.stats)
	m.HandleFunc("GET /admin/feature-flags", h.featureFlags)

	m.Handle("GET /admin/records", h.listRecords)
	m.HandleFunc("GET /admin/records/collections", h.collections)
	m.Handle("DELETE /admin/records", h.deleteRecords)
	m.Handle("DELETE /admin/records/collection", h.deleteCollection)

	m.HandleFunc("GET /admin/settings", h.listSettings)
	// The literal logo routes are more specific than {key}, so net/http
	// routes /admin/settings/logo to them.
	m.HandleFunc("PUT /admin/settings/{key}", h.putSetting)
	m.HandleFunc("DELETE /admin/settings/{key}", h.deleteSetting)
	m.HandleFunc("PUT /admin/settings/logo", h.putLogo)
	m.HandleFunc("DELETE /admin/settings/logo", h.deleteLogo)

	m.HandleFunc("GET /admin/settings/db-info", h.dbInfo)
	m.HandleFunc("GET /admin/database/status", h.databaseStatus)
	m.HandleFunc("POST /admin/database/vacuum/schedule", h.scheduleVacuum)
	m.HandleFunc("DELETE /admin/database/vacuum/schedule", h.unscheduleVacuum)
}

type handlers struct {
	admin.Deps // the record endpoints' dependencies (until they have a service)
	instance   *instance.Service
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
