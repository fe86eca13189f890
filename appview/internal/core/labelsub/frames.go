package labelsub

import (
	"bytes"
	"fmt"

	comatproto "github.com/bluesky-social/indigo/api/atproto"

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
