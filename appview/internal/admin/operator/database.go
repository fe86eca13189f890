package operator

import (
	"errors"
	"net/http"
	"time"

	"github.com/lexview/lexview/appview/internal/admin"
	"github.com/lexview/lexview/appview/internal/admins"
	"github.com/lexview/lexview/appview/internal/respond"
	"github.com/lexview/lexview/storage"
)

// Settings that drive the one-time SQLite vacuum. The App reads them at
// start-up: when VacuumScheduledSetting is "true" it runs VACUUM, deletes
// that setting and stores the time in VacuumLastRunSetting (RFC 3339).
const (
	VacuumScheduledSetting = "database.vacuum_scheduled"
	VacuumLastRunSetting   = "database.vacuum_last_run_at"
)

// dbInfo is the body of GET /admin/settings/db-info. free_disk_bytes is
// null when unknown (always on PostgreSQL); wal_size_bytes is 0 there.
type dbInfo struct {
	Dialect       string `json:"dialect"`
	Version       string `json:"version"`
	Location      string `json:"location"`
	SizeBytes     int64  `json:"size_bytes"`
	WALSizeBytes  int64  `json:"wal_size_bytes"`
	FreeDiskBytes *int64 `json:"free_disk_bytes"`
}

// vacuumStatus is the vacuum part of GET /admin/database/status.
type vacuumStatus struct {
	Supported bool    `json:"supported"`
	Scheduled bool    `json:"scheduled"`
	LastRunAt *string `json:"last_run_at"`
}

// databaseStatus is the body of GET /admin/database/status.
type databaseStatus struct {
	Dialect       string       `json:"dialect"`
	SizeBytes     int64        `json:"size_bytes"`
	WALSizeBytes  int64        `json:"wal_size_bytes"`
	FreeDiskBytes *int64       `json:"free_disk_bytes"`
	Vacuum        vacuumStatus `json:"vacuum"`
}

func freeDisk(info storage.DBInfo) *int64 {
	if info.FreeDiskBytes < 0 {
		return nil
	}
	n := info.FreeDiskBytes
	return &n
}

func (h handlers) vacuumSupported() bool { return h.Store.Dialect() == "sqlite" }

func (h handlers) dbInfo(w http.ResponseWriter, r *http.Request, _ *admins.Principal) {
	info, err := h.Store.DBInfo(r.Context())
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	respond.JSON(w, http.StatusOK, dbInfo{
		Dialect: info.Dialect, Version: info.Version, Location: info.Location,
		SizeBytes: info.SizeBytes, WALSizeBytes: info.WALSizeBytes, FreeDiskBytes: freeDisk(info),
	})
}

// setting reads an optional setting: "" when unset.
func (h handlers) setting(r *http.Request, key string) (string, error) {
	v, err := h.Store.GetSetting(r.Context(), key)
	if errors.Is(err, storage.ErrNotFound) {
		return "", nil
	}
	return v, err
}

func (h handlers) databaseStatus(w http.ResponseWriter, r *http.Request, _ *admins.Principal) {
	info, err := h.Store.DBInfo(r.Context())
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	out := databaseStatus{
		Dialect: info.Dialect, SizeBytes: info.SizeBytes, WALSizeBytes: info.WALSizeBytes, FreeDiskBytes: freeDisk(info),
		Vacuum: vacuumStatus{Supported: h.vacuumSupported()},
	}
	if out.Vacuum.Supported {
		scheduled, err := h.setting(r, VacuumScheduledSetting)
		if err != nil {
			respond.Internal(w, r, h.Log, err)
			return
		}
		last, err := h.setting(r, VacuumLastRunSetting)
		if err != nil {
			respond.Internal(w, r, h.Log, err)
			return
		}
		out.Vacuum.Scheduled = scheduled == "true"
		if t, err := time.Parse(time.RFC3339Nano, last); err == nil {
			out.Vacuum.LastRunAt = admin.NullableTimestamp(t)
		} else {
			out.Vacuum.LastRunAt = optional(last)
		}
	}
	respond.JSON(w, http.StatusOK, out)
}

// vacuumRefused answers 400 on backends without the one-time vacuum.
func (h handlers) vacuumRefused(w http.ResponseWriter) bool {
	if h.vacuumSupported() {
		return false
	}
	respond.Error(w, http.StatusBadRequest, "vacuum scheduling is only available on SQLite")
	return true
}

// scheduleVacuum answers POST /admin/database/vacuum/schedule: 200
// {scheduled: true}. The vacuum runs when the instance next starts.
func (h handlers) scheduleVacuum(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	if h.vacuumRefused(w) {
		return
	}
	if err := h.Store.PutSetting(r.Context(), VacuumScheduledSetting, "true"); err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	h.Audit(r.Context(), p, "database.vacuum_scheduled", "", nil)
	respond.JSON(w, http.StatusOK, map[string]bool{"scheduled": true})
}

// unscheduleVacuum answers DELETE /admin/database/vacuum/schedule: 200
// {scheduled: false}, whether or not a vacuum was scheduled.
func (h handlers) unscheduleVacuum(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	if h.vacuumRefused(w) {
		return
	}
	err := h.Store.DeleteSetting(r.Context(), VacuumScheduledSetting)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		respond.Internal(w, r, h.Log, err)
		return
	}
	h.Audit(r.Context(), p, "database.vacuum_unscheduled", "", nil)
	respond.JSON(w, http.StatusOK, map[string]bool{"scheduled": false})
}
