package labelsub

import (
	"bytes"
	"fmt"
	"io"
	"math"

	comatproto "github.com/bluesky-social/indigo/api/atproto"
	cbg "github.com/whyrusleeping/cbor-gen"

	"github.com/lexview/lexview/appview/internal/core/streamframe"
)

// Event-stream frame header ops (atproto event streams): a message, or an
// error after which the server closes the stream.
const (
	opMessage = streamframe.OpMessage
	opError   = streamframe.OpError
)

// frame is one decoded event-stream frame: exactly one field is set, or
// none for a message of a type this subscription does not use.
type frame struct {
	labels *comatproto.LabelSubscribeLabels_Labels
	info   *comatproto.LabelSubscribeLabels_Info
	err    *errorFrame
}

// errorFrame is the body of an error frame.
type errorFrame streamframe.ErrorBody

// decodeFrame decodes a binary WebSocket message of an event stream: a
// CBOR header ({op, t}) followed by a CBOR body, and nothing after.
func decodeFrame(data []byte) (frame, error) {
	r := bytes.NewReader(data)
	hdr, err := streamframe.ReadHeader(r)
	if err != nil {
		return frame{}, err
	}
	op, t := hdr.Op, hdr.Type
	var f frame
	switch op {
	case opError:
		body, err := streamframe.ReadError(r)
		if err != nil {
			return frame{}, err
		}
		e := errorFrame(body)
		f = frame{err: &e}
	case opMessage:
		switch t {
		case "#labels":
			f.labels = &comatproto.LabelSubscribeLabels_Labels{}
			err = f.labels.UnmarshalCBOR(r)
		case "#info":
			f.info = &comatproto.LabelSubscribeLabels_Info{}
			err = f.info.UnmarshalCBOR(r)
		default:
			return f, nil // a message type not used here: skipped whole
		}
		if err != nil {
			return frame{}, fmt.Errorf("%s body: %w", t, err)
		}
	default:
		return frame{}, fmt.Errorf("unknown frame op %d", op)
	}
	if r.Len() != 0 {
		return frame{}, fmt.Errorf("%d bytes after the frame body", r.Len())
	}
	return f, nil
}

// peekLabelsSeq reads the sequence number of a #labels frame from its
// head, the frame's first bytes: the body is a map whose keys DAG-CBOR
// orders shortest first, so "seq" comes before "labels". It reports false
// when the head is no #labels message or seq is not among the members
// read before the head ends.
func peekLabelsSeq(head []byte) (int64, bool) {
	r := bytes.NewReader(head)
	hdr, err := streamframe.ReadHeader(r)
	if err != nil || hdr.Op != opMessage || hdr.Type != "#labels" {
		return 0, false
	}
	cr := cbg.NewCborReader(r)
	maj, n, err := cr.ReadHeader()
	if err != nil || maj != cbg.MajMap {
		return 0, false
	}
	for range n {
		maj, klen, err := cr.ReadHeader()
		if err != nil || maj != cbg.MajTextString || klen > 64 {
			return 0, false
		}
		key := make([]byte, klen)
		if _, err := io.ReadFull(cr, key); err != nil {
			return 0, false
		}
		maj, v, err := cr.ReadHeader()
		if err != nil {
			return 0, false
		}
		if string(key) != "seq" {
			// Only seq is wanted, and it comes first; an unsigned
			// member before it (none in a well-formed body) is passed.
			if maj != cbg.MajUnsignedInt && maj != cbg.MajNegativeInt {
				return 0, false
			}
			continue
		}
		switch {
		case maj == cbg.MajUnsignedInt && v <= math.MaxInt64:
			return int64(v), true
		default:
			return 0, false
		}
	}
	return 0, false
}
