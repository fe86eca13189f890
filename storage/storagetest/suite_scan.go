package storagetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

// scanned is what ScanRecords handed over for one record, copied.
type scanned struct {
	URI, CID string
	Value    []byte
}

// scanPage runs ScanRecords and copies what it hands over.
func scanPage(t *testing.T, s storage.Store, q storage.ListQuery) ([]scanned, *storage.Position) {
	t.Helper()
	var out []scanned
	next, err := s.ScanRecords(context.Background(), q, func(v storage.RecordView) error {
		out = append(out, scanned{URI: string(v.URI), CID: string(v.CID), Value: append([]byte(nil), v.Value...)})
		return nil
	})
	if err != nil {
		t.Fatalf("ScanRecords(%+v): %v", q, err)
	}
	return out, next
}

// testScanMatchesList: ScanRecords pages through every kind of listing
// exactly as ListRecords does (same records, strong references and
// values, same next positions), and ScanRecord reads what GetRecord does.
func testScanMatchesList(t *testing.T, s storage.Store) {
	ctx := context.Background()
	var ops []storage.RecordOp
	for i := range 40 {
		did := []string{"did:plc:alice", "did:plc:bob", "did:plc:carol"}[i%3]
		collection := []string{"app.test.post", "app.test.like"}[i%2]
		// Some ties in time, some TID keys, some plain keys.
		at := base.Add(time.Duration(i/4) * time.Minute)
		rkey := fmt.Sprintf("k%02d", i)
		if i%5 == 0 {
			rkey = TIDKey(at.Add(-time.Hour), uint(i))
		}
		r := Rec(did, collection, rkey, at, map[string]any{"text": fmt.Sprintf("record %d", i), "n": i})
		r.CID = fmt.Sprintf("bafyreicid%02d", i)
		ops = append(ops, put(r))
	}
	apply(t, s, ops...)

	queries := []storage.ListQuery{
		{Collection: "app.test.post", Limit: 3},
		{Collection: "app.test.like", Limit: 7},
		{Collection: "app.test.post", DID: "did:plc:alice", Limit: 2},
		{DID: "did:plc:bob", Limit: 4},
		{Limit: 6}, // every collection
		{Collection: "app.test.post", Limit: 100},
		{Collection: "app.test.none", Limit: 5},
	}
	for _, q := range queries {
		for pages := 0; ; pages++ {
			if pages > 100 {
				t.Fatalf("%+v: pagination does not terminate", q)
			}
			want, err := s.ListRecords(ctx, q)
			if err != nil {
				t.Fatalf("ListRecords: %v", err)
			}
			got, next := scanPage(t, s, q)
			if len(got) != len(want.Records) {
				t.Fatalf("%+v: scanned %d records, listed %d", q, len(got), len(want.Records))
			}
			for i, r := range want.Records {
				if got[i].URI != r.URI || got[i].CID != r.CID {
					t.Fatalf("%+v: record %d: scanned %s %s, listed %s %s", q, i, got[i].URI, got[i].CID, r.URI, r.CID)
				}
				sameJSON(t, got[i].Value, r.Value)
			}
			if !reflect.DeepEqual(next, want.Next) {
				t.Fatalf("%+v: next position %+v, listed %+v", q, next, want.Next)
			}
			if next == nil {
				break
			}
			q.After = next
		}
	}

	// One record.
	want, err := s.GetRecord(ctx, "at://did:plc:bob/app.test.like/k01")
	if err != nil {
		t.Fatalf("GetRecord: %v", err)
	}
	var got scanned
	calls := 0
	err = s.ScanRecord(ctx, want.URI, func(v storage.RecordView) error {
		calls++
		got = scanned{URI: string(v.URI), CID: string(v.CID), Value: append([]byte(nil), v.Value...)}
		return nil
	})
	if err != nil || calls != 1 || got.URI != want.URI || got.CID != want.CID {
		t.Fatalf("ScanRecord: %d calls, %+v, %v; want %s %s", calls, got, err, want.URI, want.CID)
	}
	sameJSON(t, got.Value, want.Value)
	if err := s.ScanRecord(ctx, "at://did:plc:bob/app.test.like/missing", func(storage.RecordView) error {
		t.Fatal("called for a missing record")
		return nil
	}); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("ScanRecord of a missing record: %v, want ErrNotFound", err)
	}

	// An error from the callback stops the scan and comes back.
	stop := errors.New("stop")
	calls = 0
	_, err = s.ScanRecords(ctx, storage.ListQuery{Collection: "app.test.post", Limit: 10}, func(storage.RecordView) error {
		calls++
		if calls == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 2 {
		t.Fatalf("callback error: %v after %d calls; want it back after 2", err, calls)
	}
	if err := s.ScanRecord(ctx, want.URI, func(storage.RecordView) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("ScanRecord callback error: %v", err)
	}
	if _, err := s.ScanRecords(ctx, storage.ListQuery{Collection: "app.test.post"}, func(storage.RecordView) error { return nil }); err == nil {
		t.Fatal("ScanRecords with limit 0: no error")
	}
}
