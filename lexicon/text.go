package lexicon

import (
	"bytes"
	"errors"
	"unicode/utf8"
)

// Errors of CheckRecordText. Each wraps ErrRecordText.
var (
	// ErrRecordText is what every CheckRecordText error wraps.
	ErrRecordText = errors.New("record text cannot be stored")

	errNotUTF8       = textError("the record is not valid UTF-8")
	errLoneSurrogate = textError(`the record holds a lone UTF-16 surrogate escape (\ud800-\udfff)`)
	errNUL           = textError(`the record holds a NUL character (\u0000)`)
)

type textError string

func (e textError) Error() string { return string(e) }
func (e textError) Unwrap() error { return ErrRecordText }

// CheckRecordText reports whether a record's JSON text is Unicode text
// that every store keeps as it is and every strict JSON reader accepts:
//
//   - valid UTF-8 (encoding/json would replace invalid bytes with U+FFFD
//     when decoding, but raw record bytes are stored and served as they
//     came);
//   - no escaped lone UTF-16 surrogate (`\ud800` not followed by a low
//     surrogate escape, or a low one alone): valid JSON syntax, but no
//     Unicode character, refused by PostgreSQL's jsonb and by strict
//     decoders;
//   - no escaped NUL (`\u0000`), which PostgreSQL's jsonb cannot hold.
//
// Such a record is not atproto data either (its strings must be Unicode
// text), so it cannot come from a real repository. raw is assumed to be
// JSON; CheckRecordText does not check the syntax (backslashes are only
// meaningful inside strings, where it looks at them). It costs one pass
// over the bytes.
func CheckRecordText(raw []byte) error {
	if !utf8.Valid(raw) {
		return errNotUTF8
	}
	for i := 0; ; {
		k := bytes.IndexByte(raw[i:], '\\')
		if k < 0 {
			return nil
		}
		i += k
		if i+1 >= len(raw) {
			return nil // a trailing backslash: not JSON, not ours to judge
		}
		if raw[i+1] != 'u' {
			i += 2 // \" \\ \n ...: the escaped character is never a backslash that starts an escape
			continue
		}
		r, ok := escapedUnit(raw, i)
		if !ok {
			i += 2
			continue
		}
		i += 6
		switch {
		case r == 0:
			return errNUL
		case r >= 0xdc00 && r < 0xe000:
			return errLoneSurrogate
		case r >= 0xd800 && r < 0xdc00:
			lo, ok := escapedUnit(raw, i)
			if !ok || lo < 0xdc00 || lo >= 0xe000 {
				return errLoneSurrogate
			}
			i += 6
		}
	}
}

// escapedUnit decodes the `\uXXXX` escape at raw[i:], if there is one.
func escapedUnit(raw []byte, i int) (rune, bool) {
	if len(raw)-i < 6 || raw[i] != '\\' || raw[i+1] != 'u' {
		return 0, false
	}
	for _, h := range raw[i+2 : i+6] {
		if !isHex(h) {
			return 0, false
		}
	}
	return hex4(raw[i+2 : i+6]), true
}
