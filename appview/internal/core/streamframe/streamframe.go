// Package streamframe reads the envelope of atproto event-stream frames
// (com.atproto.sync.subscribeRepos, com.atproto.label.subscribeLabels): a
// CBOR header {op, t} followed by a CBOR body, or an error body.
package streamframe

import (
	"bytes"
	"errors"
	"fmt"

	cbg "github.com/whyrusleeping/cbor-gen"
)

// Frame header ops: a message, or an error after which the server closes
// the stream.
const (
	OpMessage = 1
	OpError   = -1
)

// Header is a frame's header: its op and, for a message, its type
// ("#commit", "#labels", ...).
type Header struct {
	Op   int64
	Type string
}

// ReadHeader reads a frame's header from r, leaving r at the body.
func ReadHeader(r *bytes.Reader) (Header, error) {
	m, err := ReadSmallMap(r)
	if err != nil {
		return Header{}, fmt.Errorf("header: %w", err)
	}
	op, _ := m["op"].(int64)
	t, _ := m["t"].(string)
	return Header{Op: op, Type: t}, nil
}

// ErrorBody is the body of an error frame.
type ErrorBody struct {
	Error, Message string
}

// ReadError reads an error frame's body from r.
func ReadError(r *bytes.Reader) (ErrorBody, error) {
	m, err := ReadSmallMap(r)
	if err != nil {
		return ErrorBody{}, fmt.Errorf("error frame: %w", err)
	}
	var e ErrorBody
	e.Error, _ = m["error"].(string)
	e.Message, _ = m["message"].(string)
	return e, nil
}

// MaxHeaderString bounds the strings of a frame header or error body.
const MaxHeaderString = 8 << 10

// ReadSmallMap reads a CBOR map of text keys to integers and text strings
// (a frame header, an error frame's body); other values are refused.
func ReadSmallMap(r *bytes.Reader) (map[string]any, error) {
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
		k, err := cbg.ReadStringWithMax(cr, MaxHeaderString)
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
			if v > MaxHeaderString || v > uint64(r.Len()) {
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

// Encode builds a message frame of type t (e.g. "#commit") with body, as
// a server sends it.
func Encode(t string, body cbg.CBORMarshaler) ([]byte, error) {
	var buf bytes.Buffer
	cw := cbg.NewCborWriter(&buf)
	for _, err := range []error{
		cw.WriteMajorTypeHeader(cbg.MajMap, 2),
		writeText(cw, "t"), writeText(cw, t),
		writeText(cw, "op"), cw.WriteMajorTypeHeader(cbg.MajUnsignedInt, OpMessage),
	} {
		if err != nil {
			return nil, err
		}
	}
	if err := body.MarshalCBOR(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeText(cw *cbg.CborWriter, s string) error {
	if err := cw.WriteMajorTypeHeader(cbg.MajTextString, uint64(len(s))); err != nil {
		return err
	}
	_, err := cw.WriteString(s)
	return err
}
