package xrpcmethods

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/storage"
)

// Identities resolves accounts for the default query behaviour.
type Identities interface {
	// ResolveHandle returns the DID a handle points to.
	ResolveHandle(ctx context.Context, h syntax.Handle) (syntax.DID, error)
	// PDSEndpoint returns the base URL of the PDS hosting did's repository.
	PDSEndpoint(ctx context.Context, did syntax.DID) (string, error)
}

// tokMimeType marks records that may hold blobs (current or legacy form).
var tokMimeType = []byte(`"mimeType"`)

// recordShape is what serving needs to know of a stored record's JSON.
type recordShape struct {
	served bool // a top-level "uri" or "cid" key, which serving overrides
	typed  bool // a top-level "$type" key
	blob   bool // a "mimeType" key at any depth: the record may hold blobs
	// plain is false when the value is not an object this scanner is
	// sure about (a key with escape sequences, nesting deeper than 62
	// levels, a syntax error): callers then take the slow path.
	plain bool
}

// inspect scans a JSON object without decoding it. Strings, most of a
// record's bytes, are skipped with bytes.IndexByte.
func inspect(b []byte) (s recordShape) {
	if len(b) < 2 || b[0] != '{' {
		return recordShape{}
	}
	depth, expectKey := 0, false
	var objects uint64 // bit d: the container at depth d is an object
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '{', '[':
			depth++
			if depth > 62 {
				return recordShape{}
			}
			expectKey = c == '{'
			if expectKey {
				objects |= 1 << depth
			} else {
				objects &^= 1 << depth
			}
		case '}', ']':
			depth--
			expectKey = false
		case ',':
			expectKey = depth > 0 && objects&(1<<depth) != 0
		case '"':
			start := i + 1
			k := bytes.IndexByte(b[start:], '"')
			if k < 0 {
				return recordShape{}
			}
			end := start + k
			escaped := bytes.IndexByte(b[start:end], '\\') >= 0
			if escaped {
				for end = start; end < len(b) && b[end] != '"'; end++ {
					if b[end] == '\\' {
						end++
					}
				}
				if end >= len(b) {
					return recordShape{}
				}
			}
			if expectKey {
				if escaped {
					return recordShape{}
				}
				switch key := string(b[start:end]); {
				case key == "mimeType":
					s.blob = true
				case depth != 1:
				case key == "uri" || key == "cid":
					s.served = true
				case key == "$type":
					s.typed = true
				}
				expectKey = false
			}
			i = end
		}
	}
	s.plain = depth == 0
	return s
}

// appendRecord appends the served form of rec, a record of collection, to
// buf: the record's fields plus `uri` (which replaces a top-level record
// field of that name) and `cid` (unless the record has a top-level `cid`
// of its own, which is record data and is kept): together they are the
// strong reference a client likes or replies with; a `$type` (the
// collection, when the record lacks one), and a `url` on every blob
// pointing at the author's PDS.
//
// Most records need no rewriting, and take a fast path that splices `uri`
// and `cid` into the stored JSON without decoding it.
func appendRecord(buf []byte, rec storage.RecordView, collection string, links *blobLinks) ([]byte, error) {
	v := bytes.TrimSpace(rec.Value)
	if !utf8.Valid(v) {
		// Only a record stored before the writer refused invalid UTF-8
		// can hold any; its invalid bytes are inside strings, so the
		// repaired text is still its JSON.
		v = bytes.ToValidUTF8(v, []byte("\uFFFD"))
	}
	if shape := inspect(v); shape.plain && !shape.served && shape.typed && !shape.blob {
		buf = append(buf, `{"uri":`...)
		buf = appendJSONString(buf, rec.URI)
		buf = append(buf, `,"cid":`...)
		buf = appendJSONString(buf, rec.CID)
		rest := bytes.TrimSpace(v[1:])
		if len(rest) > 0 && rest[0] != '}' {
			buf = append(buf, ',')
		}
		return append(buf, rest...), nil
	}
	uri := string(rec.URI)
	var fields map[string]any
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	if err := dec.Decode(&fields); err != nil || fields == nil {
		return buf, fmt.Errorf("record %s: stored value is not a JSON object: %v", uri, err)
	}
	fields["uri"] = uri
	if _, own := fields["cid"]; !own {
		fields["cid"] = string(rec.CID)
	}
	if _, ok := fields["$type"]; !ok {
		fields["$type"] = collection
	}
	if bytes.Contains(v, tokMimeType) {
		did, _, _ := strings.Cut(strings.TrimPrefix(uri, "at://"), "/")
		links.addURLs(fields, did)
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(fields); err != nil {
		return buf, fmt.Errorf("record %s: %w", uri, err)
	}
	return append(buf, bytes.TrimRight(out.Bytes(), "\n")...), nil
}

// appendJSONString appends s as a JSON string. AT URIs are plain ASCII, so
// the common case copies bytes; anything else goes through the encoder.
func appendJSONString[S ~string | ~[]byte](buf []byte, s S) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(string(s))
			return append(buf, b...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}

// blobLinker builds blob URLs from resolved PDS endpoints.
type blobLinker struct{ ids Identities }

// forCall returns a per-call resolver that looks each DID up once.
func (l *blobLinker) forCall(ctx context.Context) *blobLinks {
	return &blobLinks{ctx: ctx, ids: l.ids}
}

type blobLinks struct {
	ctx  context.Context
	ids  Identities
	pdss map[string]string
}

// pds returns did's PDS base URL, or "" when it cannot be resolved.
func (b *blobLinks) pds(did string) string {
	if b.ids == nil {
		return ""
	}
	if p, ok := b.pdss[did]; ok {
		return p
	}
	if b.pdss == nil {
		b.pdss = map[string]string{}
	}
	p := ""
	if d, err := syntax.ParseDID(did); err == nil {
		if endpoint, err := b.ids.PDSEndpoint(b.ctx, d); err == nil {
			p = strings.TrimRight(endpoint, "/")
		}
	}
	b.pdss[did] = p
	return p
}

// addURLs walks v and gives every blob a `url`.
func (b *blobLinks) addURLs(v any, did string) {
	switch x := v.(type) {
	case map[string]any:
		if cid := blobCID(x); cid != "" {
			if pds := b.pds(did); pds != "" {
				x["url"] = pds + "/xrpc/com.atproto.sync.getBlob?did=" + url.QueryEscape(did) + "&cid=" + url.QueryEscape(cid)
			}
			return
		}
		for _, e := range x {
			b.addURLs(e, did)
		}
	case []any:
		for _, e := range x {
			b.addURLs(e, did)
		}
	}
}

// blobCID returns the CID of a blob object (current or legacy form), or "".
func blobCID(m map[string]any) string {
	if _, ok := m["mimeType"].(string); !ok {
		return ""
	}
	if t, _ := m["$type"].(string); t == "blob" {
		ref, _ := m["ref"].(map[string]any)
		link, _ := ref["$link"].(string)
		return link
	}
	if _, typed := m["$type"]; !typed {
		cid, _ := m["cid"].(string)
		return cid
	}
	return ""
}
