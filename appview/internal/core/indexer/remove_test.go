package indexer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestWriterRemove: Remove deletes indexed records whether or not their
// collection has a record lexicon (Write refuses such a delete), and
// refuses anything but a delete or malformed identifiers.
func TestWriterRemove(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		w := setup(t, store, 0)
		ctx := context.Background()
		orphan := storagetest.Rec("did:plc:w", "app.test.gone", "x1", time.Unix(1000, 0), map[string]any{"text": "left over"})
		if err := store.ApplyBatch(ctx, storage.Batch{Ops: []storage.RecordOp{{Record: orphan}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(ctx, "test", []storage.Change{note(storage.OpCreate, "n1", "", "kept")}); err != nil {
			t.Fatal(err)
		}
		del := storage.Change{Op: storage.OpDelete, DID: "did:plc:w", Collection: "app.test.gone", RKey: "x1"}
		res, err := w.Write(ctx, "test", []storage.Change{del})
		if err != nil || len(res.Rejected) != 1 || !errors.Is(res.Rejected[0].Err, lexicon.ErrNoRecordLexicon) {
			t.Fatalf("Write of a delete without a lexicon: %+v %v", res, err)
		}

		res, err = w.Remove(ctx, "operator", []storage.Change{del, note(storage.OpDelete, "n1", "", "")})
		if err != nil || res.Accepted != 2 || len(res.Rejected) != 0 {
			t.Fatalf("remove: %+v %v", res, err)
		}
		for _, uri := range []string{orphan.URI, "at://did:plc:w/app.test.note/n1"} {
			if _, err := store.GetRecord(ctx, uri); !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("%s still indexed: %v", uri, err)
			}
		}

		res, err = w.Remove(ctx, "operator", []storage.Change{
			note(storage.OpCreate, "n2", "", "not a delete"),
			{Op: storage.OpDelete, DID: "not a did", Collection: "app.test.note", RKey: "n3"},
		})
		if err != nil || res.Accepted != 0 || len(res.Rejected) != 2 {
			t.Fatalf("refused removals: %+v %v", res, err)
		}
		if _, err := store.GetRecord(ctx, "at://did:plc:w/app.test.note/n2"); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("a create passed as a removal was written: %v", err)
		}
	})
}
