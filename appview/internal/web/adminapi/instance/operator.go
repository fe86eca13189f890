// Package instance serves the admin endpoints for running an instance:
// record statistics, browsing and deleting indexed records, instance
// settings and the logo, database status and the one-time SQLite vacuum,
// and feature flags.
package instance

import (
	"github.com/lexview/lexview/appview/internal/service/instance"
	"github.com/lexview/lexview/appview/internal/service/records"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
)

// Mount registers the operator endpoints.
func Mount(m *adminapi.Mux, inst *instance.Service, recs *records.Service) {
	h := handlers{instance: inst, records: recs}
	m.HandleFunc("GET /admin/stats", h.stats)
	m.HandleFunc("GET /admin/stats/history", h.history)
	m.HandleFunc("GET /admin/stats/health", h.health)
	m.HandleFunc("GET /admin/stats/validation", h.validation)
	m.HandleFunc("GET /admin/feature-flags", h.featureFlags)

	m.HandleFunc("GET /admin/records", h.listRecords)
	m.HandleFunc("GET /admin/records/collections", h.collections)
	m.HandleFunc("DELETE /admin/records", h.deleteRecords)
	m.HandleFunc("DELETE /admin/records/collection", h.deleteCollection)

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
	instance *instance.Service
	records  *records.Service
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
