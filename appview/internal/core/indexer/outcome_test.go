package indexer_test

import (
	"context"
	"errors"
	"testing"

	"github.com/lexview/lexview/appview/internal/core/indexer"
	"github.com/lexview/lexview/storage"
)

// verdictHook decides by the record's text: "skip" is skipped, "fail"
// fails its script, anything else is written.
type verdictHook struct{}

func (verdictHook) Wants(storage.Change) bool { return true }

func (verdictHook) Apply(_ context.Context, changes []storage.Change) ([]indexer.Outcome, error) {
	out := make([]indexer.Outcome, len(changes))
	for i, c := range changes {
		switch string(c.Record) {
		case `{"$type":"app.test.note","text":"skip"}`:
			out[i].Skip = true
		case `{"$type":"app.test.note","text":"fail"}`:
			out[i].Err = errors.New("script failed")
		}
	}
	return out, nil
}

// TestWriteReportsHookOutcomes: Write, once committed, reports the changes
// a hook skipped and those whose script failed, which are not stored;
// Submit, which does not wait, reports neither.
func TestWriteReportsHookOutcomes(t *testing.T) {
	forEachMode(t, func(t *testing.T, open func(testing.TB) storage.Store, bulkWriters int) {
		store := open(t)
		w := indexer.New(indexer.Options{Store: store, Lexicons: registry(t, store), BulkWriters: bulkWriters, Hook: verdictHook{}, Logger: quiet()})
		ctx := context.Background()
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer w.Stop(ctx)
		for name, write := range map[string]func(context.Context, string, []storage.Change) (indexer.Result, error){
			"Write": w.Write, "WriteBulk": w.WriteBulk,
		} {
			res, err := write(ctx, "import", []storage.Change{
				note(storage.OpCreate, name+"1", "", "kept"),
				note(storage.OpCreate, name+"2", "", "skip"),
				note(storage.OpCreate, name+"3", "", "fail"),
				{Op: storage.OpCreate, DID: "did:plc:w", Collection: "app.test.note", RKey: name + "4", CID: cid, Record: []byte(`{"$type":"app.test.note"}`)},
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Accepted != 3 || len(res.Rejected) != 1 || res.Skipped != 1 || len(res.ScriptFailed) != 1 ||
				res.ScriptFailed[0].URI != "at://did:plc:w/app.test.note/"+name+"3" || res.ScriptFailed[0].Err.Error() != "script failed" {
				t.Errorf("%s: %+v", name, res)
			}
		}
		if n, _ := store.CountRecords(ctx, "app.test.note"); n != 2 {
			t.Errorf("%d records stored, want the 2 kept", n)
		}
		res, err := w.Submit(ctx, "import", []storage.Change{note(storage.OpCreate, "s1", "", "fail")}, nil)
		if err != nil || res.Accepted != 1 || res.Skipped != 0 || res.ScriptFailed != nil {
			t.Errorf("Submit: %+v %v", res, err)
		}
	})
}
