package xrpcmethods

import (
	"context"
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

// maxAcceptLabelers bounds the labelers a request may name.
const maxAcceptLabelers = 20

// labelSelection is the labelers whose labels a default answer carries.
type labelSelection struct {
	labelers []string
}

// selectLabelers decides whether a default answer carries labels, and
// from which labelers: those the call names in accept (the
// Atproto-Accept-Labelers header: each `did[;redact]`), else, for a query
// whose output schema declares `labels`, every labeler the instance
// subscribes to. Only labelers the instance subscribes to count. It
// returns nil when the answer carries no labels: the call named none and
// the lexicon does not ask.
func (d *Dispatcher) selectLabelers(ctx context.Context, accept []string, lex *lexicon.Lexicon) (*labelSelection, error) {
	header := accept
	if d.labels == nil || len(header) == 0 && !lex.OutputLabels {
		return nil, nil
	}
	subscribed, err := d.labels.ListLabelers(ctx)
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
// labelers on each record served and on its author.
func (d *Dispatcher) appendLabels(ctx context.Context, buf []byte, sel *labelSelection, uris []string) ([]byte, error) {
	buf = append(buf, `,"labels":[`...)
	if len(sel.labelers) == 0 || len(uris) == 0 {
		return append(buf, ']'), nil
	}
	subjects := storage.LabelSubjects(uris)
	got, err := d.labels.LabelsFor(ctx, subjects, d.now())
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
