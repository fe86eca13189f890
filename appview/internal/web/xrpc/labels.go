package xrpc

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
)

// LabelSource is what default answers read labels from.
type LabelSource interface {
	// LabelsFor returns the labels applying at now to each subject.
	LabelsFor(ctx context.Context, subjects []string, now time.Time) (map[string][]storage.Label, error)
	// ListLabelers lists the labelers the instance subscribes to.
	ListLabelers(ctx context.Context) ([]storage.Labeler, error)
}

// Header names of atproto's label negotiation.
const (
	headerAcceptLabelers  = "Atproto-Accept-Labelers"
	headerContentLabelers = "Atproto-Content-Labelers"
)

// maxAcceptLabelers bounds the labelers a request may name.
const maxAcceptLabelers = 20

// labelSelection is the labelers whose labels a default answer carries.
type labelSelection struct {
	labelers []string
}

// selectLabelers decides whether a default answer carries labels, and
// from which labelers: those the request names in Atproto-Accept-Labelers
// (each `did[;redact]`), else, for a query whose output schema declares
// `labels`, every labeler the instance subscribes to. Only labelers the
// instance subscribes to count. It returns nil when the answer carries
// no labels: the request named none and the lexicon does not ask.
func (h *Handler) selectLabelers(r *http.Request, lex *lexicon.Lexicon) (*labelSelection, error) {
	header := r.Header.Values(headerAcceptLabelers)
	if h.labels == nil || len(header) == 0 && !lex.OutputLabels {
		return nil, nil
	}
	subscribed, err := h.labels.ListLabelers(r.Context())
	if err != nil {
		return nil, err
	}
	known := make([]string, 0, len(subscribed))
	for _, l := range subscribed {
		known = append(known, l.DID)
	}
	if len(header) == 0 {
		return &labelSelection{labelers: known}, nil
	}
	sel := &labelSelection{}
	for _, item := range strings.Split(strings.Join(header, ","), ",") {
		did, _, _ := strings.Cut(strings.TrimSpace(item), ";")
		did = strings.TrimSpace(did)
		if _, err := syntax.ParseDID(did); err != nil || !slices.Contains(known, did) || slices.Contains(sel.labelers, did) {
			continue
		}
		if len(sel.labelers) == maxAcceptLabelers {
			break
		}
		sel.labelers = append(sel.labelers, did)
	}
	return sel, nil
}

// appendLabels appends `,"labels":[...]`: the labels of the selected
// labelers on each record served and on its author, and sets the
// Atproto-Content-Labelers header to the labelers applied.
func (h *Handler) appendLabels(ctx context.Context, w http.ResponseWriter, buf []byte, sel *labelSelection, uris []string) ([]byte, error) {
	w.Header().Set(headerContentLabelers, strings.Join(sel.labelers, ", "))
	buf = append(buf, `,"labels":[`...)
	if len(sel.labelers) == 0 || len(uris) == 0 {
		return append(buf, ']'), nil
	}
	subjects := storage.LabelSubjects(uris)
	got, err := h.labels.LabelsFor(ctx, subjects, time.Now())
	if err != nil {
		return nil, err
	}
	n := 0
	for _, s := range subjects {
		for _, l := range got[s] {
			if !slices.Contains(sel.labelers, l.Src) {
				continue
			}
			if n > 0 {
				buf = append(buf, ',')
			}
			n++
			buf = appendLabel(buf, l)
		}
	}
	return append(buf, ']'), nil
}

// labelTimeLayout is how labels' times are served: UTC with milliseconds,
// the form labelers (JavaScript's toISOString) emit.
const labelTimeLayout = "2006-01-02T15:04:05.000Z"

// appendLabel appends a label as com.atproto.label.defs#label JSON,
// without its signature: Lexview verified it on arrival, and normalised
// its times to UTC, so the original signature would not verify against
// the served form.
func appendLabel(buf []byte, l storage.Label) []byte {
	ver := l.Ver
	if ver == 0 {
		ver = 1
	}
	buf = append(buf, `{"ver":`...)
	buf = strconv.AppendInt(buf, ver, 10)
	buf = append(buf, `,"src":`...)
	buf = appendJSONString(buf, l.Src)
	buf = append(buf, `,"uri":`...)
	buf = appendJSONString(buf, l.URI)
	if l.CID != "" {
		buf = append(buf, `,"cid":`...)
		buf = appendJSONString(buf, l.CID)
	}
	buf = append(buf, `,"val":`...)
	buf = appendJSONString(buf, l.Val)
	buf = append(buf, `,"cts":`...)
	buf = appendJSONString(buf, l.Cts.UTC().Format(labelTimeLayout))
	if !l.Exp.IsZero() {
		buf = append(buf, `,"exp":`...)
		buf = appendJSONString(buf, l.Exp.UTC().Format(labelTimeLayout))
	}
	return append(buf, '}')
}
