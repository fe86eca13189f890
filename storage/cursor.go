package storage

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"time"
	"unicode/utf8"
)

// ErrInvalidCursor is returned for a cursor that is malformed, corrupted, or
// was issued for another listing.
var ErrInvalidCursor = errors.New("invalid cursor")

const (
	cursorVersion  = 1
	cursorCheckLen = 6
	maxCursorLen   = 1024
)

// EncodeCursor turns a keyset position into the opaque pagination cursor
// handed to clients. scope names the listing the cursor belongs to (for
// example the collection and filters); DecodeCursor refuses the cursor under
// any other scope. Every paginated listing in Lexview uses this one format.
func EncodeCursor(scope string, p Position) string {
	buf := make([]byte, 0, 1+binary.MaxVarintLen64+len(p.URI)+cursorCheckLen)
	buf = append(buf, cursorVersion)
	buf = binary.AppendVarint(buf, p.Time.UnixMicro())
	buf = append(buf, p.URI...)
	buf = append(buf, cursorCheck(scope, buf)...)
	return base64.RawURLEncoding.EncodeToString(buf)
}

// DecodeCursor parses a cursor made by EncodeCursor for the same scope.
func DecodeCursor(scope, cursor string) (Position, error) {
	if cursor == "" || len(cursor) > maxCursorLen {
		return Position{}, ErrInvalidCursor
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(raw) < 2+cursorCheckLen || raw[0] != cursorVersion {
		return Position{}, ErrInvalidCursor
	}
	body, check := raw[:len(raw)-cursorCheckLen], raw[len(raw)-cursorCheckLen:]
	if string(check) != string(cursorCheck(scope, body)) {
		return Position{}, ErrInvalidCursor
	}
	micros, n := binary.Varint(body[1:])
	if n <= 0 {
		return Position{}, ErrInvalidCursor
	}
	uri := body[1+n:]
	if !utf8.Valid(uri) {
		return Position{}, ErrInvalidCursor
	}
	return Position{Time: time.UnixMicro(micros).UTC(), URI: string(uri)}, nil
}

// cursorCheck binds a cursor body to its scope and detects corruption. It is
// an integrity check, not an authenticator: cursors carry nothing secret.
func cursorCheck(scope string, body []byte) []byte {
	h := sha256.New()
	h.Write([]byte(scope))
	h.Write([]byte{0})
	h.Write(body)
	return h.Sum(nil)[:cursorCheckLen]
}
