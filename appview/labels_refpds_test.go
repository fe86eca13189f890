package appview_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/reflabeler"
	"github.com/lexview/lexview/appview/internal/testing/refpds"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestReferenceLabeler subscribes to a real labeler from npm
// (@skyware/labeler) whose did:plc lives in the reference PLC directory:
// its history is replayed when it is added, live labels arrive verified,
// a label script reacts to one, a negation ends a label, a query script
// filters by labels, and a restart of Lexview continues from the stored
// cursor without losing or duplicating a label.
func TestReferenceLabeler(t *testing.T) {
	t.Parallel()
	reflabeler.Require(t)
	n := refpds.Start(t)
	lab := reflabeler.Start(t, n)
	ctx := context.Background()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		backend := t.Name()[strings.LastIndexByte(t.Name(), '/')+1:]
		store := open(t)
		env := plcEnv(t, store, n.PLCURL, appview.Config{})
		admin := env.Bootstrap(t)
		putNoteLexicons(t, env)
		client, _ := env.NewClient(t, apiclients.NewClient{})
		author := "did:plc:labelled" + backend
		var notes []string
		var ops []storage.RecordOp
		for i := range 3 {
			rec := storagetest.Rec(author, "app.test.note", fmt.Sprintf("n%d", i), time.Now().Add(time.Duration(i-10)*time.Second), map[string]any{"text": fmt.Sprint(i)})
			ops = append(ops, storage.RecordOp{Record: rec})
			notes = append(notes, rec.URI)
		}
		if err := store.ApplyBatch(ctx, storage.Batch{Ops: ops}); err != nil {
			t.Fatal(err)
		}
		for trigger, src := range map[string]string{
			// A takedown removes the record from the index.
			"label.arrive:takedown": `function handle()
  if not label.neg then db.raw("DELETE FROM records WHERE uri = ?", {label.uri}) end
end`,
			// Notes without the nsfw label.
			"xrpc.query:app.test.listNotes": `function handle()
  local page = db.query{collection = "app.test.note", did = params.did, labels = {none = "nsfw"}}
  local out = json.array({})
  for i, r in ipairs(page.records) do out[i] = r.uri end
  return {uris = out}
end`,
		} {
			if r := admin.Do(t, "POST", "/admin/scripts", map[string]any{"trigger": trigger, "source": src}); r.Status != 201 {
				t.Fatalf("script %s: %d %s", trigger, r.Status, r.Raw)
			}
		}

		cursor := func() int64 {
			l, err := store.GetLabeler(ctx, lab.DID)
			if err != nil || l.Cursor == nil {
				return -1
			}
			return *l.Cursor
		}
		waitCursor := func(seq int64) {
			t.Helper()
			waitFor(t, fmt.Sprintf("cursor %d", seq), func() bool { return cursor() >= seq })
		}
		values := func(subject string) []string {
			t.Helper()
			got, err := store.LabelsFor(ctx, []string{subject}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			var vals []string
			for _, l := range got[subject] {
				if l.Src != lab.DID {
					t.Fatalf("a label from %s", l.Src)
				}
				vals = append(vals, l.Val)
			}
			return vals
		}
		// live emits a label once the subscription receives live labels:
		// skyware's labeler drops a label created while a subscriber is
		// still connecting, so probes go first until one arrives.
		probe := "at://" + author + "/app.test.probe/p"
		live := func(emit func() reflabeler.Label) reflabeler.Label {
			t.Helper()
			for i := 0; ; i++ {
				p := lab.Label(t, probe, fmt.Sprintf("probe-%d", i))
				deadline := time.Now().Add(2 * time.Second)
				for cursor() < p.Seq && time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
				}
				if cursor() >= p.Seq {
					break
				}
				if i == 10 {
					t.Fatal("no probe label arrived")
				}
			}
			l := emit()
			waitCursor(l.Seq)
			return l
		}

		// History before the subscription is replayed from cursor 0.
		history := lab.Label(t, notes[0], "spam")
		if r := admin.Do(t, "POST", "/admin/labelers", map[string]any{"did": lab.DID}); r.Status != 201 {
			t.Fatalf("add the labeler: %d %s", r.Status, r.Raw)
		}
		waitCursor(history.Seq)
		if got := values(notes[0]); !slices.Equal(got, []string{"spam"}) {
			t.Fatalf("replayed labels %v", got)
		}

		// Live labels: a takedown (its script removes the record) and an
		// nsfw label the query script filters out.
		live(func() reflabeler.Label { return lab.Label(t, notes[1], "takedown") })
		if _, err := store.GetRecord(ctx, notes[1]); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("the taken-down record: %v", err)
		}
		live(func() reflabeler.Label { return lab.Label(t, notes[2], "nsfw") })
		r := env.Do(t, "GET", "/xrpc/app.test.listNotes?did="+url.QueryEscape(author), nil, "X-Client-Key", client.Key)
		if r.Status != 200 || string(r.Raw) != `{"uris":["`+notes[0]+`"]}` {
			t.Fatalf("filtered by labels: %d %s", r.Status, r.Raw)
		}

		// A negation ends the label.
		last := live(func() reflabeler.Label { return lab.Negate(t, notes[0], "spam") })
		if got := values(notes[0]); len(got) != 0 {
			t.Fatalf("labels after the negation %v", got)
		}

		// Lexview restarts; a label emitted meanwhile arrives from the
		// stored cursor, once.
		if err := env.App.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		down := lab.Label(t, notes[0], "while-down")
		if down.Seq <= last.Seq {
			t.Fatalf("sequence %d after %d", down.Seq, last.Seq)
		}
		plcEnv(t, store, n.PLCURL, appview.Config{})
		waitCursor(down.Seq)
		if got := values(notes[0]); !slices.Equal(got, []string{"while-down"}) {
			t.Fatalf("labels after the restart %v", got)
		}
		if got := values(notes[2]); !slices.Equal(got, []string{"nsfw"}) {
			t.Fatalf("nsfw after the restart %v", got)
		}
	})
}
