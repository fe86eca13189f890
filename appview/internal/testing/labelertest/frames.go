package labelertest

import (
	"bytes"
	"context"

	comatproto "github.com/bluesky-social/indigo/api/atproto"
	"github.com/bluesky-social/indigo/atproto/labeling"
	cbg "github.com/whyrusleeping/cbor-gen"
)

// LabelsFrame encodes a #labels event-stream frame.
func LabelsFrame(seq int64, labels []labeling.Label) []byte {
	evt := comatproto.LabelSubscribeLabels_Labels{Seq: seq, Labels: make([]*comatproto.LabelDefs_Label, len(labels))}
	for i := range labels {
		l := labels[i].ToLexicon()
		evt.Labels[i] = &l
	}
	var buf bytes.Buffer
	writeHeader(&buf, 1, "#labels")
	if err := evt.MarshalCBOR(&buf); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// InfoFrame encodes an #info event-stream frame.
func InfoFrame(name, message string) []byte {
	var buf bytes.Buffer
	writeHeader(&buf, 1, "#info")
	info := comatproto.LabelSubscribeLabels_Info{Name: name, Message: &message}
	if err := info.MarshalCBOR(&buf); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// ErrorFrame encodes an error frame (header op -1).
func ErrorFrame(name, message string) []byte {
	var buf bytes.Buffer
	writeHeader(&buf, -1, "")
	cw := cbg.NewCborWriter(&buf)
	must(cw.WriteMajorTypeHeader(cbg.MajMap, 2))
	writeString(cw, "error")
	writeString(cw, name)
	writeString(cw, "message")
	writeString(cw, message)
	return buf.Bytes()
}

// Header encodes a frame header alone ({op, t}; t left out when empty),
// for building malformed frames.
func Header(op int64, t string) []byte {
	var buf bytes.Buffer
	writeHeader(&buf, op, t)
	return buf.Bytes()
}

func writeHeader(buf *bytes.Buffer, op int64, t string) {
	cw := cbg.NewCborWriter(buf)
	n := uint64(1)
	if t != "" {
		n = 2
	}
	must(cw.WriteMajorTypeHeader(cbg.MajMap, n))
	if t != "" {
		writeString(cw, "t")
		writeString(cw, t)
	}
	writeString(cw, "op")
	if op < 0 {
		must(cw.WriteMajorTypeHeader(cbg.MajNegativeInt, uint64(-op-1)))
	} else {
		must(cw.WriteMajorTypeHeader(cbg.MajUnsignedInt, uint64(op)))
	}
}

func writeString(cw *cbg.CborWriter, s string) {
	must(cw.WriteMajorTypeHeader(cbg.MajTextString, uint64(len(s))))
	_, err := cw.WriteString(s)
	must(err)
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// contextUntil is ctx, also cancelled when stop is closed.
func contextUntil(ctx context.Context, stop <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
