package indexer_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lexview/lexview/appview/internal/core/indexer"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestValidationModes: a record its lexicon refuses is refused in the mode
// reject and stored with its error in flag and hide (listed in
// Result.Flagged, counted in Stats.Flagged); in every mode a malformed
// change and a record of a collection without a lexicon are refused, and
// a valid record is stored unflagged, a source's own Invalid ignored. A
// record stored flagged and written again valid loses its flag.
func TestValidationModes(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		for _, mode := range []indexer.Mode{indexer.ModeReject, indexer.ModeFlag, indexer.ModeHide} {
			t.Run(string(mode), func(t *testing.T) {
				store := open(t)
				w := indexer.New(indexer.Options{Store: store, Lexicons: registry(t, store),
					Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
					Validation: func(string) indexer.Mode { return mode },
				})
				ctx := context.Background()
				if err := w.Start(ctx); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = w.Stop(ctx) })

				invalid := note(storage.OpCreate, "bad", "3k001", "")
				invalid.Record = json.RawMessage(`{"$type":"app.test.note","text":7}`)
				unknown := note(storage.OpCreate, "u", "3k001", "x")
				unknown.Collection = "app.test.unknown"
				malformedKey := note(storage.OpCreate, "a b", "3k001", "x")
				valid := note(storage.OpCreate, "good", "3k001", "fine")
				valid.Invalid = "a source cannot flag"
				res, err := w.Write(ctx, "test", []storage.Change{invalid, unknown, malformedKey, valid})
				if err != nil {
					t.Fatal(err)
				}
				stores := mode != indexer.ModeReject
				wantRejected, wantAccepted := 3, 1
				if stores {
					wantRejected, wantAccepted = 2, 2
				}
				if len(res.Rejected) != wantRejected || res.Accepted != wantAccepted {
					t.Fatalf("accepted %d, rejected %+v", res.Accepted, res.Rejected)
				}
				for _, r := range res.Rejected {
					if r.URI == invalid.URI() && stores {
						t.Fatalf("the invalid record was refused in mode %s", mode)
					}
				}
				got, err := store.GetRecord(ctx, invalid.URI())
				switch {
				case !stores && !errors.Is(err, storage.ErrNotFound):
					t.Fatalf("mode reject stored the invalid record: %+v %v", got, err)
				case stores && (err != nil || !strings.Contains(got.Invalid, "expected a string")):
					t.Fatalf("mode %s: stored %+v, %v; want it with its error", mode, got, err)
				}
				if stores && (len(res.Flagged) != 1 || res.Flagged[0].URI != invalid.URI() || w.Stats().Flagged != 1) {
					t.Fatalf("flagged %+v, stats %+v", res.Flagged, w.Stats())
				}
				if g, err := store.GetRecord(ctx, valid.URI()); err != nil || g.Invalid != "" {
					t.Fatalf("the valid record: %+v %v", g, err)
				}
				if !stores {
					return
				}
				// Fixed by its author: the next version is valid, unflagged.
				fixed := note(storage.OpUpdate, "bad", "3k002", "now text")
				if _, err := w.Write(ctx, "test", []storage.Change{fixed}); err != nil {
					t.Fatal(err)
				}
				if g, err := store.GetRecord(ctx, invalid.URI()); err != nil || g.Invalid != "" {
					t.Fatalf("after a valid update: %+v %v", g, err)
				}
			})
		}
	})
}

// TestCheckRecordRefusesInEveryMode: a procedure's check (CheckRecord)
// refuses an invalid record whatever the mode but off: a user's own write
// is refused before it reaches their repository.
func TestCheckRecordRefusesInEveryMode(t *testing.T) {
	store := storagetest.SQLite(t)
	reg := registry(t, store)
	for _, mode := range []indexer.Mode{indexer.ModeReject, indexer.ModeFlag, indexer.ModeHide, indexer.ModeOff} {
		w := indexer.New(indexer.Options{Store: store, Lexicons: reg, Validation: func(string) indexer.Mode { return mode }})
		err := w.CheckRecord("app.test.note", json.RawMessage(`{"$type":"app.test.note","text":7}`))
		if (err == nil) != (mode == indexer.ModeOff) {
			t.Errorf("mode %s: CheckRecord = %v", mode, err)
		}
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]indexer.Mode{"reject": indexer.ModeReject, " Flag ": indexer.ModeFlag, "HIDE": indexer.ModeHide, "off": indexer.ModeOff} {
		if got, ok := indexer.ParseMode(in); !ok || got != want {
			t.Errorf("ParseMode(%q) = %q, %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "on", "drop"} {
		if _, ok := indexer.ParseMode(in); ok {
			t.Errorf("ParseMode(%q) accepted", in)
		}
	}
}

// TestClipReason: a stored validation error is at most
// storage.MaxInvalidReason bytes of valid UTF-8, and never empty.
func TestClipReason(t *testing.T) {
	long := strings.Repeat("é", storage.MaxInvalidReason)
	for in, check := range map[string]func(string) bool{
		"":      func(s string) bool { return s != "" },
		"short": func(s string) bool { return s == "short" },
		long: func(s string) bool {
			return len(s) <= storage.MaxInvalidReason && utf8.ValidString(s) && strings.HasSuffix(s, "…")
		},
		long[:10]: func(s string) bool { return s == long[:10] },
	} {
		if got := indexer.ClipReason(in); !check(got) {
			t.Errorf("ClipReason(%d bytes) = %q (%d bytes)", len(in), got, len(got))
		}
	}
}
