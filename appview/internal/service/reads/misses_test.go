package reads

import (
	"context"
	"net/url"
	"slices"
	"testing"

	"github.com/lexview/lexview/storage"
)

// someRecords is a RecordReader whose listings hold one record for did
// "did:plc:held" and none for anyone else.
type someRecords struct{ oneRecord }

func (someRecords) ScanRecords(_ context.Context, q storage.ListQuery, fn func(storage.RecordView) error) (*storage.Position, error) {
	if q.DID == "" || q.DID == "did:plc:held" {
		return nil, fn(storage.RecordView{URI: []byte("at://did:plc:held/app.test.post/3k2a"), CID: []byte("bafy"), Value: []byte(`{}`)})
	}
	return nil, nil
}

type misses struct {
	wanted bool
	dids   []string
}

func (m *misses) Wanted() bool      { return m.wanted }
func (m *misses) Missed(did string) { m.dids = append(m.dids, did) }

// TestMisses: a first page filtered by an account that lists nothing, and
// a get that finds nothing, report the account, while misses are wanted;
// a page that lists something, a later page, an unfiltered list and a get
// that finds its record report nothing.
func TestMisses(t *testing.T) {
	ctx := context.Background()
	m := &misses{}
	s := New(someRecords{oneRecord{"at://did:plc:held/app.test.post/3k2a": `{}`}}, nil).OnMiss(m)
	list := func(params string) {
		t.Helper()
		q, _ := url.ParseQuery(params)
		if _, err := s.List(ctx, "app.test.post", q, func(storage.RecordView) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	get := func(uri string) { _ = s.Get(ctx, "app.test.post", uri, func(storage.RecordView) error { return nil }) }
	all := func() {
		list("did=did:plc:empty")
		list("did=did:plc:held")
		list("")
		get("at://did:plc:held/app.test.post/3k2a")
		get("at://did:plc:absent/app.test.post/3k2a")
	}
	all()
	if len(m.dids) != 0 {
		t.Fatalf("reported while not wanted: %v", m.dids)
	}
	m.wanted = true
	all()
	if want := []string{"did:plc:empty", "did:plc:absent"}; !slices.Equal(m.dids, want) {
		t.Fatalf("reported %v, want %v", m.dids, want)
	}
	m.dids = nil
	pos := storage.EncodeCursor(scope(storage.ListQuery{Collection: "app.test.post", DID: "did:plc:empty"}), storage.Position{URI: "at://x"})
	list("did=did:plc:empty&cursor=" + url.QueryEscape(pos))
	if len(m.dids) != 0 {
		t.Fatalf("a later page reported %v", m.dids)
	}
}
