package instance

import (
	"net/http"

	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/storage"
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

func (h handlers) dbInfo(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	info, err := h.instance.DBInfo(r.Context())
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, dbInfo{
		Dialect: info.Dialect, Version: info.Version, Location: info.Location,
		SizeBytes: info.SizeBytes, WALSizeBytes: info.WALSizeBytes, FreeDiskBytes: freeDisk(info),
	})
	return nil
}

func (h handlers) databaseStatus(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	st, err := h.instance.DatabaseStatus(r.Context())
	if err != nil {
		return err
	}
	info := st.Info
	out := databaseStatus{
		Dialect: info.Dialect, SizeBytes: info.SizeBytes, WALSizeBytes: info.WALSizeBytes, FreeDiskBytes: freeDisk(info),
		Vacuum: vacuumStatus{Supported: st.VacuumSupported, Scheduled: st.VacuumScheduled},
	}
	if st.VacuumSupported {
		out.Vacuum.LastRunAt = adminapi.NullableTimestamp(st.VacuumLastRun)
		if out.Vacuum.LastRunAt == nil {
			out.Vacuum.LastRunAt = optional(st.VacuumLastRunRaw)
		}
	}
	respond.JSON(w, http.StatusOK, out)
	return nil
}

// scheduleVacuum answers POST /admin/database/vacuum/schedule: 200
// {scheduled: true}. The vacuum runs when the instance next starts.
func (h handlers) scheduleVacuum(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	if err := h.instance.ScheduleVacuum(r.Context(), p.DID()); err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, map[string]bool{"scheduled": true})
	return nil
}

// unscheduleVacuum answers DELETE /admin/database/vacuum/schedule: 200
// {scheduled: false}, whether or not a vacuum was scheduled.
func (h handlers) unscheduleVacuum(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	if err := h.instance.UnscheduleVacuum(r.Context(), p.DID()); err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, map[string]bool{"scheduled": false})
	return nil
}
