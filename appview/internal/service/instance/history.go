package instance

import (
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/core/history"
)

// History returns the window of the instance's history named window
// (history.Hour, the default, or history.Day). fail.Invalid for another
// name; fail.Unavailable when the instance keeps no history.
func (s *Service) History(window string) (history.Window, error) {
	if s.opt.History == nil {
		return history.Window{}, fail.New(fail.Unavailable, "this instance keeps no history")
	}
	if window == "" {
		window = history.Hour
	}
	w, ok := s.opt.History.Window(window)
	if !ok {
		return history.Window{}, fail.Newf(fail.Invalid, "window must be %q or %q", history.Hour, history.Day)
	}
	return w, nil
}

// Health says whether ingestion, backfill and the database are healthy,
// as judged at the history's last sample. fail.Unavailable when the
// instance keeps no history.
func (s *Service) Health() (history.Health, error) {
	if s.opt.History == nil {
		return history.Health{}, fail.New(fail.Unavailable, "this instance keeps no history")
	}
	return s.opt.History.Health(), nil
}
