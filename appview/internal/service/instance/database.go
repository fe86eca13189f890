package instance

import (
	"context"
	"errors"
	"time"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/storage"
)

// Settings that drive the one-time SQLite vacuum. RunScheduledVacuum
// reads them at start-up: when VacuumScheduledSetting is "true" it runs
// VACUUM, deletes that setting and stores the time in
// VacuumLastRunSetting (RFC 3339).
const (
	VacuumScheduledSetting = "database.vacuum_scheduled"
	VacuumLastRunSetting   = "database.vacuum_last_run_at"
)

// DatabaseStatus is the database's size and the vacuum's state.
type DatabaseStatus struct {
	Info            storage.DBInfo
	VacuumSupported bool
	VacuumScheduled bool
	// VacuumLastRun is when the last vacuum ran; zero when it never did.
	// VacuumLastRunRaw is the stored value when it is not a time.
	VacuumLastRun    time.Time
	VacuumLastRunRaw string
}

func (s *Service) vacuumSupported() bool { return s.opt.Store.Dialect() == "sqlite" }

// DBInfo describes the database.
func (s *Service) DBInfo(ctx context.Context) (storage.DBInfo, error) { return s.opt.Store.DBInfo(ctx) }

// optionalSetting reads a setting: "" when unset.
func (s *Service) optionalSetting(ctx context.Context, key string) (string, error) {
	v, err := s.opt.Store.GetSetting(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return "", nil
	}
	return v, err
}

// DatabaseStatus reports the database and the vacuum.
func (s *Service) DatabaseStatus(ctx context.Context) (DatabaseStatus, error) {
	info, err := s.opt.Store.DBInfo(ctx)
	if err != nil {
		return DatabaseStatus{}, err
	}
	out := DatabaseStatus{Info: info, VacuumSupported: s.vacuumSupported()}
	if !out.VacuumSupported {
		return out, nil
	}
	scheduled, err := s.optionalSetting(ctx, VacuumScheduledSetting)
	if err != nil {
		return out, err
	}
	last, err := s.optionalSetting(ctx, VacuumLastRunSetting)
	if err != nil {
		return out, err
	}
	out.VacuumScheduled = scheduled == "true"
	if t, err := time.Parse(time.RFC3339Nano, last); err == nil {
		out.VacuumLastRun = t
	} else {
		out.VacuumLastRunRaw = last
	}
	return out, nil
}

var errNoVacuum = fail.New(fail.Invalid, "vacuum scheduling is only available on SQLite")

// ScheduleVacuum arms the one-time vacuum for the next start, on behalf
// of actor (SQLite only).
func (s *Service) ScheduleVacuum(ctx context.Context, actor string) error {
	if !s.vacuumSupported() {
		return errNoVacuum
	}
	if err := s.opt.Store.PutSetting(ctx, VacuumScheduledSetting, "true"); err != nil {
		return err
	}
	s.audit(ctx, actor, "database.vacuum_scheduled", "", nil)
	return nil
}

// UnscheduleVacuum disarms the one-time vacuum, whether or not it was
// armed, on behalf of actor (SQLite only).
func (s *Service) UnscheduleVacuum(ctx context.Context, actor string) error {
	if !s.vacuumSupported() {
		return errNoVacuum
	}
	err := s.opt.Store.DeleteSetting(ctx, VacuumScheduledSetting)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	s.audit(ctx, actor, "database.vacuum_unscheduled", "", nil)
	return nil
}

// vacuumer is implemented by backends that can rebuild their database
// file (SQLite).
type vacuumer interface {
	Vacuum(ctx context.Context) error
}

// RunScheduledVacuum runs the one-time SQLite vacuum armed through
// ScheduleVacuum, then disarms it and records when it ran. A failure of
// the vacuum is logged and recorded in the event log; it does not stop
// the instance, and the vacuum is disarmed either way so that a failing
// vacuum does not repeat at every start.
func (s *Service) RunScheduledVacuum(ctx context.Context) error {
	if !s.vacuumSupported() {
		return nil
	}
	v, err := s.opt.Store.GetSetting(ctx, VacuumScheduledSetting)
	if errors.Is(err, storage.ErrNotFound) || err == nil && v != "true" {
		return nil
	}
	if err != nil {
		return err
	}
	vac, ok := s.opt.Store.(vacuumer)
	if !ok {
		s.opt.Logger.Warn("a vacuum is scheduled but the store cannot vacuum")
		return nil
	}
	start := time.Now()
	s.opt.Logger.Info("running the scheduled database vacuum")
	// The vacuum may outlast the start-up deadline: it is bounded only by
	// its own completion.
	vacErr := vac.Vacuum(context.WithoutCancel(ctx))
	if err := s.opt.Store.DeleteSetting(ctx, VacuumScheduledSetting); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	took := time.Since(start)
	if vacErr != nil {
		s.opt.Logger.Error("scheduled database vacuum failed", "err", vacErr)
		s.opt.Events.Record(ctx, eventlog.Entry{Type: "database.vacuum_failed", Severity: eventlog.Error,
			Detail: map[string]any{"error": vacErr.Error()}})
		return nil
	}
	if err := s.opt.Store.PutSetting(ctx, VacuumLastRunSetting, s.opt.Now().UTC().Format(time.RFC3339)); err != nil {
		return err
	}
	s.opt.Logger.Info("scheduled database vacuum done", "took", took)
	s.opt.Events.Record(ctx, eventlog.Entry{Type: "database.vacuumed", Detail: map[string]any{"duration_ms": took.Milliseconds()}})
	return nil
}

// Stats are the instance's record statistics.
type Stats struct {
	// Collections are the collections holding records, largest first.
	Collections       []storage.CollectionCount
	TotalRecords      int64
	Lexicons          int
	RecordCollections int
	// Sync reports live ingestion and the batch writer (nil when the
	// instance does not say).
	Sync map[string]any
}

// Stats counts records by collection and reports the lexicons and sync.
func (s *Service) Stats(ctx context.Context) (Stats, error) {
	counts, err := s.opt.Store.CollectionCounts(ctx)
	if err != nil {
		return Stats{}, err
	}
	out := Stats{Collections: counts}
	for _, c := range counts {
		out.TotalRecords += c.Count
	}
	snap := s.opt.Lexicons.Snapshot()
	out.Lexicons, out.RecordCollections = snap.Len(), len(snap.RecordCollections())
	if s.opt.SyncStatus != nil {
		out.Sync = s.opt.SyncStatus()
	}
	return out, nil
}

// CollectionCounts returns the record count of every collection holding
// records, largest first.
func (s *Service) CollectionCounts(ctx context.Context) ([]storage.CollectionCount, error) {
	return s.opt.Store.CollectionCounts(ctx)
}
