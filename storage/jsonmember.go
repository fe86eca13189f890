package storage

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// topLevelMember returns the value of the member name of the JSON object
// doc, as decoding doc into a map[string]json.RawMessage and looking name
// up would: members' names are compared once unescaped, the last of
// duplicate members wins, and false means doc is not a valid JSON object
// or has no such member. It runs for every record written whose key is
// not a TID, so it scans instead of decoding: a quarter of the time and
// no allocation for a post-sized record.
func topLevelMember(doc []byte, name string) (json.RawMessage, bool) {
	if !json.Valid(doc) {
		return nil, false
	}
	// doc is valid JSON from here on, so the scan needs no checks.
	i := skipSpace(doc, 0)
	if doc[i] != '{' {
		return nil, false
	}
	i = skipSpace(doc, i+1)
	var found json.RawMessage
	ok := false
	for doc[i] != '}' {
		end := stringEnd(doc, i)
		key := doc[i:end]
		i = skipSpace(doc, end) // at ':'
		i = skipSpace(doc, i+1) // at the value
		vend := valueEnd(doc, i)
		if memberNamed(key, name) {
			found, ok = doc[i:vend], true
		}
		i = skipSpace(doc, vend) // at ',' or '}'
		if doc[i] == ',' {
			i = skipSpace(doc, i+1)
		}
	}
	return found, ok
}

// memberNamed reports whether the quoted JSON string key, unescaped, is
// name. A key with escapes or invalid UTF-8 is decoded as encoding/json
// decodes it (invalid bytes become U+FFFD), so that the scan agrees with
// decoding the record.
func memberNamed(key []byte, name string) bool {
	inner := key[1 : len(key)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner) == name
	}
	var s string
	return json.Unmarshal(key, &s) == nil && s == name
}

func skipSpace(doc []byte, i int) int {
	for i < len(doc) && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\n' || doc[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just after the string that starts at the
// quote doc[i].
func stringEnd(doc []byte, i int) int {
	for i++; ; i++ {
		switch doc[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
}

// valueEnd returns the index just after the value that starts at doc[i].
func valueEnd(doc []byte, i int) int {
	switch doc[i] {
	case '"':
		return stringEnd(doc, i)
	case '{', '[':
		depth := 0
		for {
			switch doc[i] {
			case '"':
				i = stringEnd(doc, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
	}
	for i < len(doc) { // a number, true, false or null
		switch doc[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}
