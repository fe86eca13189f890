// Package lexicon parses and checks Lexicon schema documents and keeps the
// registry: the immutable snapshot of every lexicon an instance serves,
// swapped atomically when lexicons change.
package lexicon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	indigolex "github.com/bluesky-social/indigo/atproto/lexicon"
	"github.com/bluesky-social/indigo/atproto/syntax"
)

// Kind classifies a lexicon by the type of its main definition.
type Kind string

// The kinds of lexicon. KindOther covers documents whose main definition is
// absent or of another type (subscriptions, permission sets, shared defs).
const (
	KindRecord    Kind = "record"
	KindQuery     Kind = "query"
	KindProcedure Kind = "procedure"
	KindOther     Kind = "other"
)

// MaxDocumentSize bounds a lexicon document.
const MaxDocumentSize = 1 << 20

// Document is a parsed, checked lexicon document.
type Document struct {
	ID   syntax.NSID
	Kind Kind
	// Raw is the document as uploaded.
	Raw json.RawMessage
}

// ParseError reports why a document was refused. Its message is meant for
// the uploader.
type ParseError struct {
	Msg string
	// Path is where in the document a Lexicon language error was found,
	// as dotted keys from the root ("defs.main.record.properties.text"),
	// when it could be told; the message names it too.
	Path string
}

func (e *ParseError) Error() string { return e.Msg }

func parseErr(format string, args ...any) error {
	return &ParseError{Msg: fmt.Sprintf(format, args...)}
}

// schemaErr reports a Lexicon language error of raw, naming where it is
// when that can be told: "invalid lexicon schema at PATH: ...".
func schemaErr(raw []byte, err error) error {
	if path := locate(raw, err); path != "" {
		return &ParseError{Msg: fmt.Sprintf("invalid lexicon schema at %s: %v", path, err), Path: path}
	}
	return parseErr("invalid lexicon schema: %v", err)
}

// IsParseError reports whether err is (or wraps) a ParseError.
func IsParseError(err error) bool {
	var pe *ParseError
	return errors.As(err, &pe)
}

// Parse checks a lexicon document: it must be a JSON object with `lexicon`
// equal to 1, an `id` that is a valid NSID, and definitions that pass the
// Lexicon language rules.
func Parse(raw []byte) (*Document, error) {
	if len(raw) > MaxDocumentSize {
		return nil, parseErr("lexicon document exceeds %d bytes", MaxDocumentSize)
	}
	if jsonDepth(raw) > MaxDocumentDepth {
		return nil, parseErr("lexicon document nests deeper than %d levels", MaxDocumentDepth)
	}
	var head struct {
		Lexicon json.RawMessage            `json:"lexicon"`
		ID      *string                    `json:"id"`
		Defs    map[string]json.RawMessage `json:"defs"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&head); err != nil {
		return nil, parseErr("malformed lexicon JSON: %v", err)
	}
	if dec.More() {
		return nil, parseErr("malformed lexicon JSON: trailing data after the document")
	}
	if head.ID == nil || *head.ID == "" {
		return nil, parseErr("lexicon id is required")
	}
	if string(head.Lexicon) != "1" {
		return nil, parseErr("lexicon must be 1")
	}
	id, err := syntax.ParseNSID(*head.ID)
	if err != nil {
		return nil, parseErr("invalid NSID %q", *head.ID)
	}
	var sf indigolex.SchemaFile
	if err := json.Unmarshal(raw, &sf); err != nil {
		return nil, schemaErr(raw, err)
	}
	if err := sf.FinishParse(); err != nil {
		return nil, schemaErr(raw, err)
	}
	if err := sf.CheckSchema(); err != nil {
		return nil, schemaErr(raw, err)
	}
	return &Document{ID: id, Kind: classify(head.Defs["main"]), Raw: json.RawMessage(bytes.Clone(raw))}, nil
}

func classify(main json.RawMessage) Kind {
	if main == nil {
		return KindOther
	}
	var def struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(main, &def) != nil {
		return KindOther
	}
	switch Kind(def.Type) {
	case KindRecord, KindQuery, KindProcedure:
		return Kind(def.Type)
	}
	return KindOther
}

// MaxDocumentDepth bounds how deeply objects and arrays nest in a lexicon
// document. Real lexicons nest a few levels; checking far deeper ones costs
// time that grows with the square of the depth.
const MaxDocumentDepth = 64

// jsonDepth returns the deepest nesting of objects and arrays in raw,
// skipping strings. It stops counting past MaxDocumentDepth.
func jsonDepth(raw []byte) int {
	depth, deepest, inString, escaped := 0, 0, false, false
	for _, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			if depth > deepest {
				deepest = depth
				if deepest > MaxDocumentDepth {
					return deepest
				}
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}
