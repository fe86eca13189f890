package appview

import (
	"context"

	"github.com/lexview/lexview/appview/internal/service/lexicons"
	"github.com/lexview/lexview/lexicon"
)

// Lexicons manages the App's lexicons. It is the code behind
// POST /admin/lexicons: an upload is validated, stored with a new
// revision, audited in the event log, and a record lexicon with backfill
// on gets a backfill job of its collection; routes change at once.
type Lexicons struct{ svc *lexicons.Service }

// Lexicons returns the App's lexicon service.
func (a *App) Lexicons() *Lexicons { return &Lexicons{a.svc.Lexicons} }

// Put uploads a lexicon (create or replace) and reports whether it is
// new. Attached scripts that do not compile are accepted, logged in the
// event log (lexicon.script_invalid) and fail when the method is called.
func (l *Lexicons) Put(ctx context.Context, u lexicon.Upload) (*lexicon.Lexicon, bool, error) {
	res, err := l.svc.Put(ctx, "", u)
	return res.Lexicon, res.Created, err
}

// Delete removes a lexicon and its routes; its records stay.
func (l *Lexicons) Delete(ctx context.Context, id string) error { return l.svc.Delete(ctx, "", id) }

// Snapshot returns the current immutable set of lexicons; hold it for the
// length of a request without locking.
func (l *Lexicons) Snapshot() *lexicon.Snapshot { return l.svc.Snapshot() }
