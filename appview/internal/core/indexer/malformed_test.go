package indexer_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/core/indexer"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestWriterRefusesMalformedChanges: whatever the source, a change whose
// DID, collection, record key, CID or rev does not parse, or whose record
// is not storable Unicode text, is rejected (ErrMalformed) and never
// written, with lexicon validation on or off; the valid changes beside it
// are written. On PostgreSQL such a record used to fail every commit of
// its batch, for ever (the writer retries until a commit succeeds).
func TestWriterRefusesMalformedChanges(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		for _, validation := range []bool{true, false} {
			store := open(t)
			w := indexer.New(indexer.Options{Store: store, Lexicons: registry(t, store),
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
				Validation: func(string) indexer.Mode {
					if validation {
						return indexer.ModeHide // malformed changes are refused in every mode
					}
					return indexer.ModeOff
				},
			})
			if err := w.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			withRecord := func(c storage.Change, raw string) storage.Change {
				c.Record = json.RawMessage(raw)
				return c
			}
			with := func(f func(*storage.Change)) storage.Change {
				c := note(storage.OpCreate, "bad", "3k001", "x")
				f(&c)
				return c
			}
			bad := map[string]storage.Change{
				"DID without an identifier":  with(func(c *storage.Change) { c.DID = "did:evil" }),
				"DID with a space":           with(func(c *storage.Change) { c.DID = "did:plc:a b" }),
				"non-ASCII record key":       with(func(c *storage.Change) { c.RKey = "ключ" }),
				"record key ..":              with(func(c *storage.Change) { c.RKey = ".." }),
				"collection not an NSID":     with(func(c *storage.Change) { c.Collection = "app.test.note/../x" }),
				"CID not a CID":              with(func(c *storage.Change) { c.CID = "not a cid" }),
				"rev not UTF-8":              with(func(c *storage.Change) { c.Rev = "3k\xff" }),
				"delete of a bad record key": {Op: storage.OpDelete, DID: "did:plc:w", Collection: "app.test.note", RKey: "a/b", Rev: "3k1"},
				"record not UTF-8":           withRecord(note(storage.OpCreate, "u1", "3k001", ""), "{\"$type\":\"app.test.note\",\"text\":\"\xff\xfe\"}"),
				"lone high surrogate":        withRecord(note(storage.OpCreate, "u2", "3k001", ""), `{"$type":"app.test.note","text":"\ud800"}`),
				"lone low surrogate":         withRecord(note(storage.OpCreate, "u3", "3k001", ""), `{"$type":"app.test.note","text":"x\udfffy"}`),
				"NUL":                        withRecord(note(storage.OpCreate, "u4", "3k001", ""), `{"$type":"app.test.note","text":"a\u0000b"}`),
			}
			changes := []storage.Change{note(storage.OpCreate, "good", "3k001", "kept \\ud83d\\ude00")}
			for _, c := range bad {
				changes = append(changes, c)
			}
			res, err := w.Write(ctx, "test", changes)
			if err != nil {
				t.Fatalf("validation %v: write: %v", validation, err)
			}
			if res.Accepted != 1 || len(res.Rejected) != len(bad) {
				t.Fatalf("validation %v: accepted %d, rejected %d of %d", validation, res.Accepted, len(res.Rejected), len(bad))
			}
			for _, r := range res.Rejected {
				if !errors.Is(r.Err, indexer.ErrMalformed) {
					t.Errorf("validation %v: %s: %v, want ErrMalformed", validation, r.URI, r.Err)
				}
			}
			for _, rkey := range []string{"u1", "u2", "u3", "u4", "bad"} {
				if _, err := store.GetRecord(ctx, "at://did:plc:w/app.test.note/"+rkey); !errors.Is(err, storage.ErrNotFound) {
					t.Fatalf("validation %v: %s was stored (%v)", validation, rkey, err)
				}
			}
			rec, err := store.GetRecord(ctx, "at://did:plc:w/app.test.note/good")
			if err != nil || lexicon.CheckRecordText(rec.Value) != nil {
				t.Fatalf("validation %v: good: %s %v", validation, rec.Value, err)
			}
			// Labels stay NSIDs: the collection that is none counts as "(invalid)".
			if got := w.TakeRejections(); got["(invalid)"] != 1 || got["app.test.note"] != len(bad)-1 {
				t.Fatalf("validation %v: rejections %v", validation, got)
			}
			cancel()
			if err := w.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	})
}
