package appview

import (
	"context"

	"github.com/lexview/lexview/appview/internal/service/lexicons"
	"github.com/lexview/lexview/backfill"
	"github.com/lexview/lexview/lexicon"
)

// Lexicons manages the App's lexicons. It is the code behind
// POST /admin/lexicons: an upload is validated, stored with a new
// revision, audited in the event log, and a record lexicon with backfill
// on gets a backfill job of its collection; routes change at once.
type Lexicons struct{ svc *lexicons.Service }

// Lexicons returns the App's lexicon service.
func (a *App) Lexicons() *Lexicons { return &Lexicons{a.svc.Lexicons} }

// LexiconPutResult is what a lexicon upload did: what POST /admin/lexicons
// answers.
type LexiconPutResult struct {
	// Lexicon is the lexicon stored, with its new revision.
	Lexicon *lexicon.Lexicon
	// Created is true for a new lexicon, false for a new revision of one.
	Created bool
	// ScriptErrors holds the compile error of each attached Lua source
	// that does not compile, by field ("script", "index_hook"). The
	// lexicon is stored all the same, and the upload is logged as
	// lexicon.script_invalid; calling its method fails until the script
	// is fixed.
	ScriptErrors map[string]string
	// Backfill is the network backfill job of a record lexicon uploaded
	// with backfill on: started by this upload (Backfill.Created), or
	// already unfinished. nil when there is none.
	Backfill *backfill.CollectionJob
	// Warnings are what the uploader should know: a whole-network crawl
	// started, no job started because backfill defaulted to false (an App
	// without live ingestion), or a job that could not be created.
	Warnings []string
}

// Put uploads a lexicon (create or replace). Backfill left nil in u means
// true when the App follows a live event stream and false when it does
// not. A document that does not parse is an ErrInvalid *Error wrapping
// the *lexicon.ParseError.
func (l *Lexicons) Put(ctx context.Context, u lexicon.Upload) (LexiconPutResult, error) {
	res, err := l.svc.Put(ctx, "", u)
	return LexiconPutResult{Lexicon: res.Lexicon, Created: res.Created, ScriptErrors: res.ScriptErrors,
		Backfill: res.Backfill, Warnings: res.Warnings}, publicError(err)
}

// Delete removes a lexicon and its routes; its records stay. An unknown id
// is an ErrNotFound *Error.
func (l *Lexicons) Delete(ctx context.Context, id string) error {
	return publicError(l.svc.Delete(ctx, "", id))
}

// Snapshot returns the current immutable set of lexicons; hold it for the
// length of a request without locking.
func (l *Lexicons) Snapshot() *lexicon.Snapshot { return l.svc.Snapshot() }
