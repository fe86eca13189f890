package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/coder/websocket"

	"github.com/lexview/lexview/storage"
)

// event is a Jetstream message.
type event struct {
	DID    string `json:"did"`
	TimeUS int64  `json:"time_us"`
	Kind   string `json:"kind"`
	Commit *struct {
		Rev        string          `json:"rev"`
		Operation  string          `json:"operation"`
		Collection string          `json:"collection"`
		RKey       string          `json:"rkey"`
		Record     json.RawMessage `json:"record"`
		CID        string          `json:"cid"`
	} `json:"commit"`
	Identity *struct {
		Handle string `json:"handle"`
	} `json:"identity"`
	Account *struct {
		Active bool   `json:"active"`
		Status string `json:"status"`
	} `json:"account"`
}

// errSkippedPast ends a connection that met an event larger than
// MaxSkipSize: the next one resumes after it.
var errSkippedPast = errors.New("an event too large to read through was skipped")

// read handles messages until the connection ends.
func (j *Jetstream) read(ctx context.Context, conn *websocket.Conn, collections []string, pos *position, sink Sink) error {
	for {
		_, r, err := conn.Reader(ctx)
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		data, err := io.ReadAll(io.LimitReader(r, j.MaxMessageSize+1))
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		received := j.now()
		if int64(len(data)) > j.MaxMessageSize {
			// Too large to decode: read the rest through without keeping
			// it; the position comes from the start of the event.
			h := scanHead(data)
			rest, err := io.Copy(io.Discard, r)
			h.size = int64(len(data)) + rest
			if err != nil && !(errors.Is(err, websocket.ErrMessageTooBig) && h.timeUS > 0) {
				return fmt.Errorf("read: %w", err)
			}
			cause := fmt.Sprintf("the event is larger than %d bytes", j.MaxMessageSize)
			if serr := j.skip(ctx, sink, pos, SkipTooLarge, h, cause, received); serr != nil {
				return serr
			}
			if err != nil {
				// The connection is closed (StatusMessageTooBig): resume past
				// the event rather than meet it again.
				pos.skippedPast = max(pos.skippedPast, h.timeUS)
				return fmt.Errorf("%w (larger than %d bytes): %w", errSkippedPast, j.MaxSkipSize, err)
			}
			continue
		}
		var ev event
		if err := json.Unmarshal(data, &ev); err != nil {
			h := scanHead(data)
			h.size = int64(len(data))
			if serr := j.skip(ctx, sink, pos, SkipUndecodable, h, err.Error(), received); serr != nil {
				return serr
			}
			continue
		}
		if err := j.handle(ctx, ev, collections, sink, received); err != nil {
			return err
		}
		if ev.TimeUS > pos.last {
			pos.last = ev.TimeUS
		}
		j.status.event(pos.last, received, time.UnixMicro(ev.TimeUS))
	}
}

// handle hands a decoded event to the sink.
func (j *Jetstream) handle(ctx context.Context, ev event, collections []string, sink Sink, received time.Time) error {
	switch ev.Kind {
	case "commit":
		c := ev.Commit
		if c == nil || !slices.Contains(collections, c.Collection) {
			break
		}
		change := storage.Change{
			Op: storage.ChangeOp(c.Operation), DID: ev.DID, Collection: c.Collection, RKey: c.RKey,
			CID: c.CID, Rev: c.Rev, Record: c.Record, Received: received,
		}
		if change.Op == storage.OpDelete {
			change.Record, change.CID = nil, ""
		}
		if err := sink.Records(ctx, []storage.Change{change}, ev.TimeUS); err != nil {
			return fmt.Errorf("hand over records: %w", err)
		}
	case "identity":
		if ev.Identity != nil {
			sink.Identity(ctx, IdentityEvent{DID: ev.DID, Handle: ev.Identity.Handle})
		}
	case "account":
		if ev.Account != nil {
			sink.Account(ctx, AccountEvent{DID: ev.DID, Active: ev.Account.Active, Status: ev.Account.Status})
		}
	}
	return nil
}

// skip reports an event the source goes past and, when its position is
// known and ahead, moves the position past it and stores it (every event
// before it has been handed over: events are read in order).
func (j *Jetstream) skip(ctx context.Context, sink Sink, pos *position, reason string, h head, cause string, received time.Time) error {
	j.Logger.Warn("Jetstream event skipped", "reason", reason, "time_us", h.timeUS, "bytes", h.size,
		"did", h.did, "collection", h.collection, "err", cause)
	sink.Skipped(ctx, SkippedEvent{
		Reason: reason, Position: h.timeUS, Size: h.size, Kind: h.kind, DID: h.did,
		Collection: h.collection, RKey: h.rkey, Err: cause,
	})
	if h.timeUS > pos.last {
		pos.last = h.timeUS
		if err := sink.Records(ctx, nil, pos.last); err != nil {
			return fmt.Errorf("hand over the position of a skipped event: %w", err)
		}
	}
	j.status.event(pos.last, received, time.Time{})
	return nil
}

// head is what can be read of an event that does not decode: its
// top-level time_us, did and kind, and its commit's collection and rkey,
// each only when present with the right type.
type head struct {
	timeUS                      int64
	did, kind, collection, rkey string
	size                        int64 // bytes of the event
}

// scanHead reads what it can of an event's head from data, which may be
// cut short (the first MaxMessageSize bytes of a larger event) or not be
// JSON at all. Only top-level fields count (a record cannot pass its
// fields off as the event's); it stops at the first syntax error.
func scanHead(data []byte) head {
	var h head
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return h
	}
	for dec.More() {
		key, raw, ok := nextField(dec, "commit")
		if !ok {
			return h
		}
		switch key {
		case "time_us":
			if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil && n > 0 {
				h.timeUS = n
			}
		case "did":
			h.did = stringOf(raw)
		case "kind":
			h.kind = stringOf(raw)
		case "commit":
			if !scanCommit(dec, &h) {
				return h
			}
		}
	}
	return h
}

// scanCommit reads a commit object's collection and rkey from dec, which
// is at the object's value; false when the object ended the input.
func scanCommit(dec *json.Decoder, h *head) bool {
	t, err := dec.Token()
	if err != nil {
		return false
	}
	if d, ok := t.(json.Delim); !ok {
		return true // a scalar, consumed: the fields after it can still be read
	} else if d != '{' {
		return false // an array: its elements are not the event's fields
	}
	for dec.More() {
		key, raw, ok := nextField(dec, "")
		if !ok {
			return false
		}
		switch key {
		case "collection":
			h.collection = stringOf(raw)
		case "rkey":
			h.rkey = stringOf(raw)
		}
	}
	_, err = dec.Token() // '}'
	return err == nil
}

// nextField reads an object's next key and, unless the key is open (left
// for the caller to read), its raw value.
func nextField(dec *json.Decoder, open string) (string, json.RawMessage, bool) {
	t, err := dec.Token()
	if err != nil {
		return "", nil, false
	}
	key, _ := t.(string)
	if key == open && open != "" {
		return key, nil, true
	}
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return "", nil, false
	}
	return key, raw, true
}

// stringOf decodes raw if it is a JSON string, else "".
func stringOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}
