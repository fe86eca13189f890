// Package lexicons is the service for the instance's lexicons: upload
// (create or replace, with its revision, attached scripts, audit entry and
// the automatic backfill job of a record lexicon), removal, and reading.
// POST /admin/lexicons and App.Lexicons() are both this code.
package lexicons

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/fieldindexes"
	"github.com/lexview/lexview/backfill"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
)

// ScriptChecker compiles Lua sources (the script runtime).
type ScriptChecker interface {
	Check(source string) error
}

// BackfillStarter starts the network backfill of a collection unless one
// is already unfinished, and returns the job (the backfill job manager).
type BackfillStarter interface {
	CreateForCollection(ctx context.Context, collection, actorDID string) (backfill.CollectionJob, error)
}

// Indexes declares field indexes (the fieldindexes service), for the
// indexes of a record lexicon upload.
type Indexes interface {
	// CheckRoom reports whether collection has room for the indexes of
	// specs it does not have yet.
	CheckRoom(ctx context.Context, collection string, specs []storage.FieldIndexSpec) error
	// Declare declares one index on behalf of actor.
	Declare(ctx context.Context, actor string, spec storage.FieldIndexSpec) (storage.FieldIndex, bool, error)
}

// Options are what the service works with. Registry and Events are
// required; Scripts and Backfill may be nil (no syntax check, no
// automatic backfill job).
type Options struct {
	Registry *lexicon.Registry
	Scripts  ScriptChecker
	Backfill BackfillStarter
	// LiveIngestion tells whether the instance follows a live event
	// stream. Without one (JETSTREAM_URL=off and no Config.Ingest.EventSource)
	// an upload that does not say backfill stores it as false and starts
	// no job: an instance that does not follow the network does not start
	// crawling it unasked.
	LiveIngestion bool
	// BuiltinMethods are the NSIDs of XRPC methods the instance answers
	// itself, whatever lexicon is uploaded under them: such an upload is
	// stored, with a warning that its route is not served.
	BuiltinMethods []string
	// Indexes declares the field indexes an upload asks for; nil: an
	// upload that asks for some is refused.
	Indexes Indexes
	Events  *eventlog.Log
	Logger  *slog.Logger
}

// Service manages lexicons.
type Service struct{ opt Options }

// New returns the service.
func New(opt Options) *Service {
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	return &Service{opt: opt}
}

// Result is what an upload did.
type Result struct {
	Lexicon *lexicon.Lexicon
	Created bool // a new lexicon, not a new revision of one
	// ScriptErrors holds the compile error of each attached Lua source that
	// does not compile, by field ("script", "index_hook"). The lexicon is
	// stored all the same: calling its method answers 500 `script
	// execution failed` until the script is fixed.
	ScriptErrors map[string]string
	// Backfill is the network backfill job of a record lexicon uploaded
	// with backfill true: started by this upload, or already unfinished.
	Backfill *backfill.CollectionJob
	// Warnings are what the uploader should know: a whole-network crawl
	// started, no job started because backfill defaulted to false, a
	// job that could not be created, or an index that could not be
	// declared.
	Warnings []string
	// Indexes are the field indexes the upload declared (PutIndexed), as
	// they are now: new ones building, existing ones as they were.
	Indexes []storage.FieldIndex
}

// Put uploads a lexicon on behalf of actor (a DID; "" for the instance
// itself): it validates the document, stores it with a new revision and
// swaps the routes in at once, records lexicon.created or
// lexicon.updated, notes attached scripts that do not compile
// (lexicon.script_invalid, warn), and for a record lexicon with backfill
// on starts a network backfill job of its collection, with a warning in
// the result. Backfill left unset means true on an instance with live
// ingestion and false without (Options.LiveIngestion). A document that
// does not parse is an Invalid error.
func (s *Service) Put(ctx context.Context, actor string, u lexicon.Upload) (Result, error) {
	return s.put(ctx, actor, u, nil, true)
}

var (
	errIndexesOff       = fail.New(fail.Invalid, "indexes cannot be declared on this instance")
	errNotRecordLexicon = fail.New(fail.Invalid, "indexes are declared with record lexicons only")
)

// PutIndexed is Put for an upload that also declares field indexes on
// the lexicon's collection (each spec's Collection is ignored: a record
// lexicon's collection is its id). The indexes are checked before
// anything is stored (Validate, room in the collection): a bad one, or
// indexes with a lexicon that is not a record lexicon, refuse the whole
// upload (Invalid, the message naming the index: "indexes[1]: path ...").
// Once the lexicon is stored they are declared (fieldindexes.Service.Declare);
// one that still fails is a warning in the result.
func (s *Service) PutIndexed(ctx context.Context, actor string, u lexicon.Upload, indexes []storage.FieldIndexSpec) (Result, error) {
	return s.put(ctx, actor, u, indexes, true)
}

// checkIndexes validates the indexes of an upload of doc and returns
// them normalised, with the lexicon's collection.
func (s *Service) checkIndexes(ctx context.Context, doc json.RawMessage, indexes []storage.FieldIndexSpec) ([]storage.FieldIndexSpec, error) {
	if s.opt.Indexes == nil {
		return nil, errIndexesOff
	}
	d, err := lexicon.Parse(doc)
	if err != nil {
		return nil, fail.Wrap(fail.Invalid, err.Error(), err)
	}
	if d.Kind != lexicon.KindRecord {
		return nil, errNotRecordLexicon
	}
	out := make([]storage.FieldIndexSpec, len(indexes))
	for i, spec := range indexes {
		spec.Collection = d.ID.String()
		if out[i], err = fieldindexes.Validate(spec); err != nil {
			var fe *fail.Error
			if errors.As(err, &fe) {
				return nil, fail.Wrap(fe.Kind, fmt.Sprintf("indexes[%d]: %s", i, fe.Message), err)
			}
			return nil, err
		}
	}
	if err := s.opt.Indexes.CheckRoom(ctx, d.ID.String(), out); err != nil {
		return nil, err
	}
	return out, nil
}

// declareIndexes declares the checked indexes of an upload into res.
func (s *Service) declareIndexes(ctx context.Context, actor string, specs []storage.FieldIndexSpec, res *Result) {
	for _, spec := range specs {
		f, _, err := s.opt.Indexes.Declare(ctx, actor, spec)
		if err != nil {
			s.opt.Logger.ErrorContext(ctx, "declaring a field index of a lexicon upload failed", "collection", spec.Collection,
				"path", spec.Path, "kind", spec.Kind, "err", err)
			res.Warnings = append(res.Warnings, fmt.Sprintf("the %s index on %s could not be declared (see the server log); "+
				"declare it with POST /admin/indexes", spec.Kind, spec.Path))
			continue
		}
		res.Indexes = append(res.Indexes, f)
	}
}

func (s *Service) put(ctx context.Context, actor string, u lexicon.Upload, indexes []storage.FieldIndexSpec, backfill bool) (Result, error) {
	if len(indexes) > 0 {
		var err error
		if indexes, err = s.checkIndexes(ctx, u.Document, indexes); err != nil {
			return Result{}, err
		}
	}
	defaulted := u.Backfill == nil && !s.opt.LiveIngestion
	if defaulted {
		u.Backfill = new(false)
	}
	l, created, err := s.opt.Registry.Put(ctx, u)
	if lexicon.IsParseError(err) {
		return Result{}, fail.Wrap(fail.Invalid, err.Error(), err)
	}
	if err != nil {
		return Result{}, err
	}
	res := Result{Lexicon: l, Created: created}
	event := "lexicon.updated"
	if created {
		event = "lexicon.created"
	}
	s.opt.Events.Record(ctx, eventlog.Entry{Type: event, ActorDID: actor, Subject: l.ID, Detail: map[string]any{
		"revision": l.Revision, "lexicon_type": l.Kind, "backfill": l.Backfill, "target_collection": optional(l.TargetCollection),
	}})
	if errs := s.checkScripts(l); len(errs) > 0 {
		res.ScriptErrors = errs
		s.opt.Events.Record(ctx, eventlog.Entry{Type: "lexicon.script_invalid", Severity: eventlog.Warn, ActorDID: actor,
			Subject: l.ID, Detail: map[string]any{"revision": l.Revision, "errors": errs}})
	}
	if slices.Contains(s.opt.BuiltinMethods, l.ID) {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%s is a built-in method of this instance: the lexicon is stored, "+
			"but the built-in method answers every call of %s (its script, if any, never runs)", l.ID, l.ID))
	}
	if len(indexes) > 0 {
		s.declareIndexes(ctx, actor, indexes, &res)
	}
	if backfill && l.Kind == lexicon.KindRecord && s.opt.Backfill != nil {
		s.startBackfill(ctx, actor, l, defaulted, &res)
	}
	return res, nil
}

// Revise stores a new revision of a lexicon that is not an upload (a
// network lexicon its authority republished): as Put, but it never starts
// a backfill job, and the stored backfill flag is the one u gives.
func (s *Service) Revise(ctx context.Context, actor string, u lexicon.Upload) (Result, error) {
	if u.Backfill == nil {
		u.Backfill = new(false)
	}
	return s.put(ctx, actor, u, nil, false)
}

// startBackfill starts (or finds) the network backfill job of an uploaded
// record lexicon, or explains in the result why there is none.
func (s *Service) startBackfill(ctx context.Context, actor string, l *lexicon.Lexicon, defaulted bool, res *Result) {
	switch {
	case defaulted:
		w := fmt.Sprintf("no backfill job was started: this instance follows no live event stream "+
			"(JETSTREAM_URL=off), so backfill defaults to false; send \"backfill\": true, or POST /admin/backfill, "+
			"to fetch the history of %s", l.ID)
		res.Warnings = append(res.Warnings, w)
		s.opt.Logger.InfoContext(ctx, "lexicon upload: "+w, "lexicon", l.ID)
		return
	case !l.Backfill:
		return
	}
	// The lexicon is stored either way; a job that cannot be created is
	// logged, and an operator can start one with POST /admin/backfill.
	job, err := s.opt.Backfill.CreateForCollection(ctx, l.ID, actor)
	if err != nil {
		s.opt.Logger.ErrorContext(ctx, "creating the backfill job of a record lexicon failed", "collection", l.ID, "err", err)
		res.Warnings = append(res.Warnings, "the backfill job could not be created (see the server log); "+
			"start one with POST /admin/backfill")
		return
	}
	res.Backfill = &job
	if job.Created {
		w := fmt.Sprintf("backfill job %s crawls the whole network: it lists every repository holding %s "+
			"through the relay %s and fetches their records; cancel it with POST /admin/backfill/%s/cancel, "+
			"or upload with \"backfill\": false to skip it", job.Job.ID, l.ID, job.RelayURL, job.Job.ID)
		res.Warnings = append(res.Warnings, w)
		s.opt.Logger.WarnContext(ctx, "lexicon upload: "+w, "lexicon", l.ID, "job", job.Job.ID)
	}
}

// checkScripts compiles the lexicon's attached sources.
func (s *Service) checkScripts(l *lexicon.Lexicon) map[string]string {
	if s.opt.Scripts == nil {
		return nil
	}
	var errs map[string]string
	for _, f := range []struct{ field, src string }{{"script", l.Script}, {"index_hook", l.IndexHook}} {
		if f.src == "" {
			continue
		}
		if err := s.opt.Scripts.Check(f.src); err != nil {
			if errs == nil {
				errs = map[string]string{}
			}
			errs[f.field] = err.Error()
		}
	}
	return errs
}

var errNotFound = fail.New(fail.NotFound, "lexicon not found")

// Delete removes a lexicon and its routes on behalf of actor
// (lexicon.deleted). Its records stay.
func (s *Service) Delete(ctx context.Context, actor, id string) error {
	err := s.opt.Registry.Delete(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return errNotFound
	}
	if err != nil {
		return err
	}
	s.opt.Events.Record(ctx, eventlog.Entry{Type: "lexicon.deleted", ActorDID: actor, Subject: id})
	return nil
}

// Get returns one lexicon of the current snapshot.
func (s *Service) Get(id string) (*lexicon.Lexicon, error) {
	l, ok := s.opt.Registry.Snapshot().Get(id)
	if !ok {
		return nil, errNotFound
	}
	return l, nil
}

// List returns every lexicon of the current snapshot.
func (s *Service) List() []*lexicon.Lexicon { return s.opt.Registry.Snapshot().All() }

// Snapshot returns the current immutable snapshot.
func (s *Service) Snapshot() *lexicon.Snapshot { return s.opt.Registry.Snapshot() }

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
