package storage

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"
)

// CreationTime returns the time a record is listed by (Record.CreatedAt):
// when it was created, as far as Lexview can tell, but never later than
// when Lexview indexed it:
//
//   - the timestamp of the record key, when the key is a TID;
//   - else the record's top-level createdAt, when it is a string holding a
//     datetime (read leniently, as indigo's syntax.ParseDatetimeLenient
//     does: a missing time zone is taken as UTC);
//   - else indexedAt.
//
// A creation time later than indexedAt is taken as indexedAt, so that a
// record dated in the future cannot hold the head of a listing. The
// result is in UTC, at microsecond precision (as stored). It depends on
// nothing but its arguments, so both backends, and a migration filling
// existing rows, compute the same value.
func CreationTime(rkey string, value json.RawMessage, indexedAt time.Time) time.Time {
	t, ok := claimedCreation(rkey, value)
	if !ok || t.After(indexedAt) {
		t = indexedAt
	}
	return time.UnixMicro(t.UnixMicro()).UTC()
}

// claimedCreation returns the creation time a record key or value states.
func claimedCreation(rkey string, value json.RawMessage) (time.Time, bool) {
	if tid, err := syntax.ParseTID(rkey); err == nil {
		return tid.Time(), true
	}
	// Top-level keys only, matched exactly (a struct field would also
	// match "CreatedAt" or "createdat").
	raw, ok := topLevelMember(value, "createdAt")
	if !ok {
		return time.Time{}, false
	}
	var s string
	if len(raw) >= 2 && raw[0] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		s = string(raw[1 : len(raw)-1]) // a valid string without escapes
	} else if json.Unmarshal(raw, &s) != nil {
		return time.Time{}, false
	}
	dt, err := syntax.ParseDatetimeLenient(s)
	if err != nil {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, dt.String())
	return t, err == nil
}
