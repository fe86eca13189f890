package labelsub

import (
	"bytes"
	"errors"
	"fmt"

	comatproto "github.com/bluesky-social/indigo/api/atproto"
	cbg "github.com/whyrusleeping/cbor-gen"
)

// Event-stream frame header ops (atproto event streams): a message, or an
// error after which the server closes the stream.
const (
	opMessage = 1
	opError   = -1
)

// frame is one decoded event-stream frame: exactly one field is set, or
// none for a message of a type this subscription does not use.
type frame struct {
	labels *comatproto.LabelSubscribeLabels_Labels
	info   *comatproto.LabelSubscribeLabels_Info
	err    *errorFrame
	// kind is the message type ("#labels", "#info", ...) or "error".
	kind string
}

// errorFrame is the body of an error frame.
type errorFrame struct {
	Error, Message string
}

// decodeFrame decodes a binary WebSocket message of an event stream: a
// CBOR header ({op, t}) followed by a CBOR body, and nothing after.
func decodeFrame(data []byte) (frame, error) {
	r := bytes.NewReader(data)
	hdr, err := readSmallMap(r)
	if err != nil {
		return frame{}, fmt.Errorf("header: %w", err)
	}
	op, _ := hdr["op"].(int64)
	t, _ := hdr["t"].(string)
	var f frame
	switch op {
	case opError:
		body, err := readSmallMap(r)
		if err != nil {
			return frame{}, fmt.Errorf("error frame: %w", err)
		}
		e := &errorFrame{}
		e.Error, _ = body["error"].(string)
		e.Message, _ = body["message"].(string)
		f = frame{err: e, kind: "error"}
	case opMessage:
		f.kind = t
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

// maxHeaderString bounds the strings of a frame header or error body.
const maxHeaderString = 8 << 10

// readSmallMap reads a CBOR map of text keys to integers and text strings
// (a frame header, an error frame's body); other values are refused.
func readSmallMap(r *bytes.Reader) (map[string]any, error) {
	cr := cbg.NewCborReader(r)
	maj, n, err := cr.ReadHeader()
	if err != nil {
		return nil, err
	}
	if maj != cbg.MajMap {
		return nil, errors.New("not a map")
	}
	if n > 16 {
		return nil, fmt.Errorf("map of %d entries", n)
	}
	out := make(map[string]any, n)
	for range n {
		k, err := cbg.ReadStringWithMax(cr, maxHeaderString)
		if err != nil {
			return nil, fmt.Errorf("key: %w", err)
		}
		maj, v, err := cr.ReadHeader()
		if err != nil {
			return nil, err
		}
		switch maj {
		case cbg.MajUnsignedInt:
			if v > 1<<62 {
				return nil, fmt.Errorf("%s: integer out of range", k)
			}
			out[k] = int64(v)
		case cbg.MajNegativeInt:
			if v > 1<<62 {
				return nil, fmt.Errorf("%s: integer out of range", k)
			}
			out[k] = -1 - int64(v)
		case cbg.MajTextString:
			if v > maxHeaderString || v > uint64(r.Len()) {
				return nil, fmt.Errorf("%s: string too long", k)
			}
			b := make([]byte, v)
			if _, err := r.Read(b); err != nil {
				return nil, err
			}
			out[k] = string(b)
		default:
			return nil, fmt.Errorf("%s: unexpected CBOR type %d", k, maj)
		}
	}
	return out, nil
}
