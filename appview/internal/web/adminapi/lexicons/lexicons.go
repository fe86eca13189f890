// Package lexicons serves the admin lexicon endpoints: upload (create or
// replace), list, get with the raw document, and delete, over the lexicons
// service.
package lexicons

import (
	"encoding/json"
	"net/http"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/lexicons"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/adminapi/fieldindexes"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
)

// Mount registers the lexicon endpoints.
func Mount(m *adminapi.Mux, svc *lexicons.Service) {
	h := handlers{svc}
	m.HandleFunc("POST /admin/lexicons", h.upload)
	m.HandleFunc("GET /admin/lexicons", h.list)
	m.HandleFunc("GET /admin/lexicons/{id}", h.get)
	m.HandleFunc("DELETE /admin/lexicons/{id}", h.delete)
}

type handlers struct{ svc *lexicons.Service }

// summary is the list shape of a lexicon.
type summary struct {
	ID               string  `json:"id"`
	Revision         int     `json:"revision"`
	LexiconType      string  `json:"lexicon_type"`
	Backfill         bool    `json:"backfill"`
	TargetCollection *string `json:"target_collection"`
	HasScript        bool    `json:"has_script"`
	HasIndexHook     bool    `json:"has_index_hook"`
	CreatedAt        string  `json:"created_at"`
	UpdatedAt        string  `json:"updated_at"`
}

// detail adds the raw document and the scripts.
type detail struct {
	summary
	LexiconJSON json.RawMessage `json:"lexicon_json"`
	Script      *string         `json:"script"`
	IndexHook   *string         `json:"index_hook"`
}

// uploaded is the answer to an upload: the specification's {id,
// revision}, then the Outcome.
type uploaded struct {
	ID       string `json:"id"`
	Revision int    `json:"revision"`
	Outcome
}

// Outcome is what an upload adds to the specification's answer, each part
// present only when it has something to say: ScriptErrors, the compile
// error of each attached source that does not compile, by field;
// BackfillJob, the network backfill job of a record lexicon uploaded with
// backfill true (started by this upload, or already unfinished); Warnings,
// sentences for the uploader (a whole-network crawl started, no job
// because backfill defaulted to false, a job that could not be created,
// an index that could not be declared); Indexes, the field indexes the
// upload declared. Adding a network lexicon answers with it too.
type Outcome struct {
	ScriptErrors map[string]string    `json:"script_errors,omitempty"`
	BackfillJob  *BackfillJob         `json:"backfill_job,omitempty"`
	Warnings     []string             `json:"warnings,omitempty"`
	Indexes      []fieldindexes.Index `json:"indexes,omitempty"`
}

// BackfillJob names the backfill job of an upload: its id, scope
// (network), status, and whether this upload created it.
type BackfillJob struct {
	ID      string `json:"id"`
	Scope   string `json:"scope"`
	Status  string `json:"status"`
	Created bool   `json:"created"`
}

// NewOutcome renders what the upload res did.
func NewOutcome(res lexicons.Result) Outcome {
	out := Outcome{ScriptErrors: res.ScriptErrors, Warnings: res.Warnings}
	if len(res.Indexes) > 0 {
		out.Indexes = fieldindexes.NewIndexes(res.Indexes)
	}
	if j := res.Backfill; j != nil {
		out.BackfillJob = &BackfillJob{ID: j.Job.ID, Scope: j.Job.Scope, Status: j.Job.Status, Created: j.Created}
	}
	return out
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func summarize(l *lexicon.Lexicon) summary {
	return summary{
		ID: l.ID, Revision: l.Revision, LexiconType: string(l.Kind), Backfill: l.Backfill,
		TargetCollection: optional(l.TargetCollection), HasScript: l.Script != "", HasIndexHook: l.IndexHook != "",
		CreatedAt: adminapi.Timestamp(l.CreatedAt), UpdatedAt: adminapi.Timestamp(l.UpdatedAt),
	}
}

type uploadRequest struct {
	LexiconJSON      json.RawMessage `json:"lexicon_json"`
	Backfill         *bool           `json:"backfill"`
	TargetCollection *string         `json:"target_collection"`
	Script           *string         `json:"script"`
	IndexHook        *string         `json:"index_hook"`
	// Indexes are field indexes to declare on a record lexicon's
	// collection: {path, kind?} each (kind value by default).
	Indexes []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	} `json:"indexes"`
}

func (h handlers) upload(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	var req uploadRequest
	if err := adminapi.Read(w, r, &req); err != nil {
		return err
	}
	if len(req.LexiconJSON) == 0 || string(req.LexiconJSON) == "null" {
		return fail.New(fail.Invalid, "lexicon_json is required")
	}
	doc := req.LexiconJSON
	var quoted string
	if json.Unmarshal(doc, &quoted) == nil { // a document sent as a JSON string
		doc = json.RawMessage(quoted)
	}
	up := lexicon.Upload{Document: doc, Backfill: req.Backfill, TargetCollection: deref(req.TargetCollection),
		Script: deref(req.Script), IndexHook: deref(req.IndexHook)}
	var indexes []storage.FieldIndexSpec
	if len(req.Indexes) > 0 {
		if err := adminapi.Require(p, admins.IndexesManage); err != nil {
			return err
		}
		for _, ix := range req.Indexes {
			indexes = append(indexes, storage.FieldIndexSpec{Path: ix.Path, Kind: storage.FieldIndexKind(ix.Kind)})
		}
	}
	res, err := h.svc.PutIndexed(r.Context(), p.DID(), up, indexes)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	respond.JSON(w, status, uploaded{ID: res.Lexicon.ID, Revision: res.Lexicon.Revision, Outcome: NewOutcome(res)})
	return nil
}

func (h handlers) list(w http.ResponseWriter, _ *http.Request, _ *admins.Principal) error {
	all := h.svc.List()
	out := make([]summary, len(all))
	for i, l := range all {
		out[i] = summarize(l)
	}
	respond.JSON(w, http.StatusOK, out)
	return nil
}

func (h handlers) get(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	l, err := h.svc.Get(r.PathValue("id"))
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, detail{
		summary: summarize(l), LexiconJSON: l.Raw, Script: optional(l.Script), IndexHook: optional(l.IndexHook),
	})
	return nil
}

func (h handlers) delete(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	if err := h.svc.Delete(r.Context(), p.DID(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
