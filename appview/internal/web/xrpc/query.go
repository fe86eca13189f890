package xrpc

import (
	"net/http"
	"net/url"
	"sync"

	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
)

var emptyRecords = []byte(`{"records":[]}`)

// maxPooledBody is the largest response buffer kept for reuse; a larger
// one (a page of very large records) is left to the garbage collector.
const maxPooledBody = 1 << 20

// bodies are response buffers reused across requests.
type bodies struct{ pool sync.Pool }

func (b *bodies) get() *[]byte {
	if p, ok := b.pool.Get().(*[]byte); ok {
		return p
	}
	p := make([]byte, 0, 16<<10)
	return &p
}

func (b *bodies) put(p *[]byte) {
	if cap(*p) <= maxPooledBody {
		*p = (*p)[:0]
		b.pool.Put(p)
	}
}

// query runs the default query behaviour: one record by `uri`, or a page
// of the target collection, the stored JSON spliced into the answer as the
// store reads it.
func (h *Handler) query(w http.ResponseWriter, r *http.Request, lex *lexicon.Lexicon) {
	if lex.TargetCollection == "" {
		respond.Raw(w, http.StatusOK, emptyRecords)
		return
	}
	params, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		respond.Error(w, http.StatusBadRequest, "malformed query string")
		return
	}
	sel, err := h.selectLabelers(r, lex)
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return
	}
	body := h.bodies.get()
	defer h.bodies.put(body)
	out := &recordAppender{buf: *body, collection: lex.TargetCollection, links: h.blobs.forRequest(r.Context()), keepURIs: sel != nil}
	if params.Has("uri") {
		out.buf = append(out.buf, `{"record":`...)
		if err := h.reads.Get(r.Context(), out.collection, params.Get("uri"), out.add); err != nil {
			respond.Fail(w, r, h.log, err)
			return
		}
		h.finish(w, r, body, out.buf, sel, out.uris)
		return
	}
	out.buf = append(out.buf, `{"records":[`...)
	cursor, err := h.reads.List(r.Context(), out.collection, params, out.add)
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return
	}
	buf := out.buf
	buf = append(buf, ']')
	if cursor != "" {
		buf = append(buf, `,"cursor":"`...)
		buf = append(buf, cursor...)
		buf = append(buf, '"')
	}
	h.finish(w, r, body, buf, sel, out.uris)
}

// finish closes a default answer, with the labels of its records when
// sel asks for them, and sends it.
func (h *Handler) finish(w http.ResponseWriter, r *http.Request, body *[]byte, buf []byte, sel *labelSelection, uris []string) {
	if sel != nil {
		var err error
		if buf, err = h.appendLabels(r.Context(), w, buf, sel, uris); err != nil {
			respond.Fail(w, r, h.log, err)
			return
		}
	}
	*body = append(buf, '}')
	respond.Raw(w, http.StatusOK, *body)
}

// recordAppender appends the served form of records of one collection to
// buf, separated by commas.
type recordAppender struct {
	buf        []byte
	n          int
	collection string
	links      *blobLinks
	// keepURIs collects the URIs of the records added, for their labels.
	keepURIs bool
	uris     []string
}

func (a *recordAppender) add(rec storage.RecordView) error {
	if a.n > 0 {
		a.buf = append(a.buf, ',')
	}
	a.n++
	if a.keepURIs {
		a.uris = append(a.uris, string(rec.URI))
	}
	var err error
	a.buf, err = appendRecord(a.buf, rec, a.collection, a.links)
	return err
}
