package reads

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/storage"
)

// oneRecord is a RecordReader holding records by URI.
type oneRecord map[string]string

func (o oneRecord) ScanRecord(_ context.Context, uri string, fn func(storage.RecordView) error) error {
	v, ok := o[uri]
	if !ok {
		return storage.ErrNotFound
	}
	return fn(storage.RecordView{URI: []byte(uri), CID: []byte("bafy"), Value: []byte(v)})
}

func (oneRecord) ScanRecords(context.Context, storage.ListQuery, func(storage.RecordView) error) (*storage.Position, error) {
	return nil, nil
}

// TestGetAcceptsWhatParseATURIAccepts: Get's own splitting of an AT URI
// refuses (400) exactly what syntax.ParseATURI refuses or what names no
// record (no collection or record key), and looks up the rest.
func TestGetAcceptsWhatParseATURIAccepts(t *testing.T) {
	const coll = "app.test.post"
	stored := "at://did:plc:alice/app.test.post/3k2a"
	s := New(oneRecord{stored: `{"$type":"app.test.post"}`}, nil)
	for _, raw := range []string{
		stored,
		"at://did:plc:alice/app.test.post/nope",
		"at://did:plc:alice/app.test.other/3k2a",
		"at://did:web:example.com/app.test.post/3k2a",
		"at://did:plc:alice/app.test.post/self",
		"at://did:plc:alice/app.test.post/a:b~c.d_e-f",
		"at://did:plc:alice/app.test.post/3k2a#/frag",
		"at://did:plc:alice/app.test.post/3k2a?x=1",
		"at://did:plc:alice/app.test.post/3k2a/more",
		"at://did:plc:alice/app.test.post/",
		"at://did:plc:alice/app.test.post",
		"at://did:plc:alice",
		"at://did:plc:alice/",
		"at://did:plc:alice//3k2a",
		"at://did:plc:alice/Not_An_NSID/3k2a",
		"at:///app.test.post/3k2a",
		"at://DID:PLC:alice/app.test.post/3k2a",
		"at://did:plc:al%20ice/app.test.post/3k2a",
		"at://did:plc:alice/app.test.post/..",
		"at://did:plc:alice/app.test.post/.",
		"at://did:plc:alice/app.test.post/" + strings.Repeat("k", 513),
		"at://did:plc:alice/app.test.post/3k 2a",
		"https://did:plc:alice/app.test.post/3k2a",
		"did:plc:alice/app.test.post/3k2a",
		"",
	} {
		err := s.Get(context.Background(), coll, raw, func(storage.RecordView) error { return nil })
		u, perr := syntax.ParseATURI(raw)
		valid := perr == nil && u.Collection() != "" && u.RecordKey() != "" && !strings.ContainsAny(raw, "#?")
		var f *fail.Error
		bad := errors.As(err, &f) && f.Kind == fail.Invalid
		if bad == valid {
			t.Errorf("%q: Get answered %v; syntax.ParseATURI says valid=%v (%v)", raw, err, valid, perr)
		}
		if raw == stored && err != nil {
			t.Errorf("%q: %v", raw, err)
		}
	}
}
