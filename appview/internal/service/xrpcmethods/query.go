package xrpcmethods

import (
	"context"
	"net/http"

	"github.com/lexview/lexview/storage"
)

var emptyRecords = []byte(`{"records":[]}`)

// query runs the default query behaviour: one record by `uri`, or a page
// of the target collection, the stored JSON spliced into the answer as the
// store reads it.
func (d *Dispatcher) query(ctx context.Context, c Call, dst []byte) (Answer, error) {
	lex := c.Lexicon
	if lex.TargetCollection == "" {
		return Answer{Status: http.StatusOK, Body: append(dst, emptyRecords...)}, nil
	}
	sel, err := d.selectLabelers(ctx, c.AcceptLabelers, lex)
	if err != nil {
		return Answer{}, err
	}
	out := &recordAppender{buf: dst, collection: lex.TargetCollection, links: d.blobs.forCall(ctx), keepURIs: sel != nil}
	if c.Params.Has("uri") {
		out.buf = append(out.buf, `{"record":`...)
		if err := d.reads.Get(ctx, out.collection, c.Params.Get("uri"), out.add); err != nil {
			return Answer{}, err
		}
		return d.finish(ctx, out.buf, sel, out.uris)
	}
	out.buf = append(out.buf, `{"records":[`...)
	cursor, err := d.reads.List(ctx, out.collection, c.Params, out.add)
	if err != nil {
		return Answer{}, err
	}
	buf := append(out.buf, ']')
	if cursor != "" {
		buf = append(buf, `,"cursor":"`...)
		buf = append(buf, cursor...)
		buf = append(buf, '"')
	}
	return d.finish(ctx, buf, sel, out.uris)
}

// finish closes a default answer, with the labels of its records when
// sel asks for them.
func (d *Dispatcher) finish(ctx context.Context, buf []byte, sel *labelSelection, uris []string) (Answer, error) {
	ans := Answer{Status: http.StatusOK}
	if sel != nil {
		var err error
		if buf, err = d.appendLabels(ctx, buf, sel, uris); err != nil {
			return Answer{}, err
		}
		ans.Labeled, ans.ContentLabelers = true, sel.labelers
	}
	ans.Body = append(buf, '}')
	return ans, nil
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
