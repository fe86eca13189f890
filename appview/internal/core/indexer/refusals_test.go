package indexer_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lexview/lexview/appview/internal/core/indexer"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestRefusalsKeepTheLatest: the writer lists the changes validation
// refused with their source, collection and reason, newest first, and
// keeps only the latest MaxRefusals.
func TestRefusalsKeepTheLatest(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		w := setup(t, open(t), 0)
		ctx := context.Background()
		if got := w.Refusals(); len(got) != 0 {
			t.Fatalf("refusals before any: %+v", got)
		}
		missing := storage.Change{Op: storage.OpCreate, DID: "did:plc:w", Collection: "app.test.note", RKey: "first",
			CID: cid, Record: []byte(`{"$type":"app.test.note"}`)}
		if _, err := w.Write(ctx, "jetstream", []storage.Change{missing}); err != nil {
			t.Fatal(err)
		}
		got := w.Refusals()
		if len(got) != 1 || got[0].URI != "at://did:plc:w/app.test.note/first" || got[0].Source != "jetstream" ||
			got[0].Collection != "app.test.note" || !strings.Contains(got[0].Reason, "text") || got[0].At.IsZero() {
			t.Fatalf("refusals %+v, want the record lacking its text", got)
		}
		var more []storage.Change
		for i := range indexer.MaxRefusals + 5 {
			c := note(storage.OpCreate, fmt.Sprintf("bad%d", i), "", "")
			c.DID = "did:evil" // malformed: refused before the lexicon
			more = append(more, c)
		}
		if _, err := w.Write(ctx, "backfill", more); err != nil {
			t.Fatal(err)
		}
		got = w.Refusals()
		if len(got) != indexer.MaxRefusals {
			t.Fatalf("%d refusals kept, want %d", len(got), indexer.MaxRefusals)
		}
		last := fmt.Sprintf("at://did:evil/app.test.note/bad%d", indexer.MaxRefusals+4)
		if got[0].URI != last || got[len(got)-1].URI != "at://did:evil/app.test.note/bad5" {
			t.Fatalf("newest %q, oldest %q; want %q and bad5", got[0].URI, got[len(got)-1].URI, last)
		}
	})
}
