package appview_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestListsByCreationTimeWithStrongRefs: the default list query serves a
// collection backfilled in random order newest created first (by the TID
// keys' times, not the order of indexing), every served record carries
// its uri and cid (except that a record's own top-level cid field is kept:
// it is the record's data), and a cursor of the order by indexing time is refused.
func TestListsByCreationTimeWithStrongRefs(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		env := newEnv(t, store, "https://pds.example.com")
		env.putLexicon(t, postLexicon, "")
		env.putLexicon(t, listLexicon, "app.test.post")

		created := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
		var recs []storage.Record
		for i := range 30 {
			fields := map[string]any{"text": fmt.Sprintf("post %d", i)}
			if i == 11 {
				fields["cid"] = "the record's own cid field"
			}
			r := storagetest.Rec(fmt.Sprintf("did:plc:u%d", i%3), "app.test.post",
				storagetest.TIDKey(created.Add(time.Duration(i)*time.Minute), 0), time.Time{}, fields)
			r.CID = fmt.Sprintf("bafyreicid%02d", i)
			recs = append(recs, r)
		}
		fetched := slices.Clone(recs)
		rand.New(rand.NewPCG(5, 6)).Shuffle(len(fetched), func(i, j int) { fetched[i], fetched[j] = fetched[j], fetched[i] })
		for i, r := range fetched {
			r.IndexedAt = time.Now().Add(time.Duration(i) * time.Second)
			if err := store.ApplyBatch(context.Background(), storage.Batch{Ops: []storage.RecordOp{{Record: r}}}); err != nil {
				t.Fatal(err)
			}
		}

		var got []string
		path := "/xrpc/app.test.listPosts?limit=7"
		for {
			status, body := env.call(t, "GET", path)
			if status != 200 {
				t.Fatalf("%s: %d %v", path, status, body)
			}
			for _, r := range body["records"].([]any) {
				m := r.(map[string]any)
				got = append(got, m["uri"].(string))
				var want storage.Record
				for _, rec := range recs {
					if rec.URI == m["uri"] {
						want = rec
					}
				}
				wantCID := want.CID
				if want.URI == recs[11].URI {
					wantCID = "the record's own cid field"
				}
				if m["cid"] != wantCID || m["text"] == nil {
					t.Fatalf("served %v, want cid %s", m, wantCID)
				}
			}
			cursor, more := body["cursor"].(string)
			if !more {
				break
			}
			path = "/xrpc/app.test.listPosts?limit=7&cursor=" + url.QueryEscape(cursor)
		}
		var want []string
		for i := len(recs) - 1; i >= 0; i-- {
			want = append(want, recs[i].URI)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("listed\n%v\nwant newest created first\n%v", got, want)
		}

		own := recs[11]
		status, body := env.call(t, "GET", "/xrpc/app.test.listPosts?uri="+url.QueryEscape(own.URI))
		if rec, _ := body["record"].(map[string]any); status != 200 || rec["uri"] != own.URI || rec["cid"] != "the record's own cid field" || rec["text"] != "post 11" {
			t.Fatalf("single record: %d %v", status, body)
		}

		// A cursor of the listing as it was before (by indexing time).
		old := storage.EncodeCursor("records\x00app.test.post\x00", storage.Position{Time: time.Now(), URI: recs[5].URI})
		status, body = env.call(t, "GET", "/xrpc/app.test.listPosts?cursor="+url.QueryEscape(old))
		if status != 400 || body["error"] != "invalid cursor" {
			t.Fatalf("old cursor: %d %v", status, body)
		}
	})
}
