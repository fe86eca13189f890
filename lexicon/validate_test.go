package lexicon_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage/storagetest"
)

const noteDoc = `{"lexicon":1,"id":"app.test.note","defs":{"main":{"type":"record","key":"tid","record":{
  "type":"object","required":["text","createdAt"],
  "properties":{
    "text":{"type":"string","maxLength":20},
    "createdAt":{"type":"string","format":"datetime"},
    "subject":{"type":"ref","ref":"com.atproto.repo.strongRef"},
    "image":{"type":"blob","accept":["image/*"]},
    "tags":{"type":"array","items":{"type":"string"},"maxLength":3}
  }}}}}`

func TestValidateRecord(t *testing.T) {
	reg := lexicon.NewRegistry(storagetest.SQLite(t))
	if _, _, err := reg.Put(context.Background(), lexicon.Upload{Document: json.RawMessage(noteDoc)}); err != nil {
		t.Fatal(err)
	}
	snap := reg.Snapshot()
	ok := []string{
		`{"$type":"app.test.note","text":"hi","createdAt":"2026-01-02T03:04:05Z"}`,
		`{"text":"no type","createdAt":"2026-01-02T03:04:05.123Z"}`,
		// A ref to a lexicon the instance does not hold is not checked.
		`{"$type":"app.test.note","text":"hi","createdAt":"2026-01-02T03:04:05Z","subject":{"uri":"at://x","cid":"y"}}`,
		`{"$type":"app.test.note","text":"hi","createdAt":"2026-01-02T03:04:05Z","image":{"$type":"blob","ref":{"$link":"bafkreibme22gw2h7y2h7tg2fhqotaqjucnbc24deqo72b6mkl2egezxhvy"},"mimeType":"image/png","size":10}}`,
		`{"$type":"app.test.note","text":"hi","createdAt":"2026-01-02T03:04:05Z","extra":"unknown fields are allowed"}`,
	}
	for _, rec := range ok {
		if err := snap.ValidateRecord("app.test.note", json.RawMessage(rec)); err != nil {
			t.Errorf("%s: %v", rec, err)
		}
	}
	bad := []string{
		`{"$type":"app.test.note","createdAt":"2026-01-02T03:04:05Z"}`,
		`{"$type":"app.test.note","text":"this text is far too long to be accepted","createdAt":"2026-01-02T03:04:05Z"}`,
		`{"$type":"app.test.note","text":"hi","createdAt":"yesterday"}`,
		`{"$type":"app.test.note","text":5,"createdAt":"2026-01-02T03:04:05Z"}`,
		`{"$type":"app.test.other","text":"hi","createdAt":"2026-01-02T03:04:05Z"}`,
		`{"$type":"app.test.note","text":"hi","createdAt":"2026-01-02T03:04:05Z","tags":["a","b","c","d"]}`,
		`{"$type":"app.test.note","text":"hi","createdAt":"2026-01-02T03:04:05Z","image":{"$type":"blob","ref":{"$link":"bafkreibme22gw2h7y2h7tg2fhqotaqjucnbc24deqo72b6mkl2egezxhvy"},"mimeType":"text/plain","size":10}}`,
		`[1,2]`,
		`not json`,
	}
	for _, rec := range bad {
		if err := snap.ValidateRecord("app.test.note", json.RawMessage(rec)); err == nil {
			t.Errorf("accepted %s", rec)
		}
	}
	err := snap.ValidateRecord("app.test.unknown", json.RawMessage(ok[0]))
	if !errors.Is(err, lexicon.ErrNoRecordLexicon) || !strings.Contains(err.Error(), "no record lexicon") {
		t.Fatalf("unknown collection: %v", err)
	}
}
