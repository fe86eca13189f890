package appview_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

const likeLexicon = `{"lexicon":1,"id":"app.test.like","defs":{"main":{"type":"record","key":"tid","record":{"type":"object","required":["subject"],"properties":{"subject":{"type":"object","required":["uri"],"properties":{"uri":{"type":"string","format":"at-uri"},"cid":{"type":"string"}}}}}}}}`

// TestBacklinksInScripts runs db.backlinks and db.backlinkCount in a
// query script over records written through the batch writer, and sees
// a deletion through the writer leave the answers at once.
func TestBacklinksInScripts(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		e := newScriptEnv(t, open(t))
		ctx := context.Background()
		if _, err := e.App.Lexicons().Put(ctx, lexicon.Upload{Document: json.RawMessage(likeLexicon)}); err != nil {
			t.Fatal(err)
		}
		e.seed(t, 2)
		note := func(i int) string { return fmt.Sprintf("at://%s/app.test.note/3k%05d", e.did, i) }
		// Five likes of note 1 from three accounts, one of note 2.
		like := func(did, rkey, subject string) storage.Change {
			rec, _ := json.Marshal(map[string]any{"$type": "app.test.like", "subject": map[string]any{"uri": subject, "cid": "bafyreinote"}})
			return storage.Change{Op: storage.OpCreate, DID: did, Collection: "app.test.like", RKey: rkey, CID: "bafyreilike" + rkey, Record: rec}
		}
		base := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC) // in the past: a later claimed creation counts as now
		tid := func(i int) string { return syntax.NewTIDFromTime(base.Add(time.Duration(i)*time.Second), 0).String() }
		changes := []storage.Change{like("did:plc:liker2", tid(9), note(2))}
		likers := []string{"did:plc:liker0", "did:plc:liker1", "did:plc:liker2", "did:plc:liker0", "did:plc:liker1"}
		for i, did := range likers {
			changes = append(changes, like(did, tid(i), note(1)))
		}
		if _, err := e.App.Writer().Write(ctx, "test", changes); err != nil {
			t.Fatal(err)
		}
		e.setScript(t, "xrpc.query:app.test.feed", `function handle()
			local src = "app.test.like:subject.uri"
			local first = db.backlinks{subject = params.uri, source = src, limit = 2}
			local rest = db.backlinks{subject = params.uri, source = src, limit = 100, cursor = first.cursor}
			local mine = db.backlinks{subject = params.uri, source = src, did = {"did:plc:liker0"}}
			local rkeys = {}
			for _, r in ipairs(first.records) do rkeys[#rkeys + 1] = r.rkey end
			for _, r in ipairs(rest.records) do rkeys[#rkeys + 1] = r.rkey end
			local ok, err = pcall(db.backlinks, {subject = params.uri, source = src, limit = 101})
			return {
				total = first.total, rkeys = rkeys, last = rest.cursor == nil, head = first.records[1],
				mine = mine.total, count = db.backlinkCount{subject = params.uri, source = src, dids = true},
				refused = not ok and err:find("limit must be an integer between 1 and 100", 1, true) ~= nil,
			}
		end`)
		type answer struct {
			Total int64             `json:"total"`
			RKeys []string          `json:"rkeys"`
			Last  bool              `json:"last"`
			Head  map[string]string `json:"head"`
			Mine  int64             `json:"mine"`
			Count struct {
				Records int64 `json:"records"`
				DIDs    int64 `json:"dids"`
			} `json:"count"`
			Refused bool `json:"refused"`
		}
		call := func() answer {
			t.Helper()
			r := e.get(t, "/xrpc/app.test.feed?uri="+note(1))
			if r.Status != 200 {
				t.Fatalf("script: %d %s; %s", r.Status, r.Raw, e.admin.Do(t, "GET", "/admin/events?event_type=script.error", nil).Raw)
			}
			var a answer
			r.JSON(t, &a)
			return a
		}
		got := call()
		wantRKeys := fmt.Sprint([]string{tid(4), tid(3), tid(2), tid(1), tid(0)})
		if got.Total != 5 || fmt.Sprint(got.RKeys) != wantRKeys || !got.Last || got.Mine != 2 ||
			got.Count.Records != 5 || got.Count.DIDs != 3 || !got.Refused {
			t.Fatalf("got %+v, want 5 likes %s newest first, 2 of liker0, 3 accounts, limit 101 refused", got, wantRKeys)
		}
		if got.Head["uri"] != "at://did:plc:liker1/app.test.like/"+tid(4) || got.Head["did"] != "did:plc:liker1" ||
			got.Head["collection"] != "app.test.like" || got.Head["rkey"] != tid(4) || len(got.Head) != 4 {
			t.Fatalf("a record: %v", got.Head)
		}

		// A like deleted through the writer leaves the index with it.
		del := storage.Change{Op: storage.OpDelete, DID: "did:plc:liker1", Collection: "app.test.like", RKey: tid(4)}
		if _, err := e.App.Writer().Write(ctx, "test", []storage.Change{del}); err != nil {
			t.Fatal(err)
		}
		if got := call(); got.Total != 4 || got.Count.Records != 4 || got.Count.DIDs != 3 || len(got.RKeys) != 4 {
			t.Fatalf("after the delete: %+v", got)
		}
	})
}
