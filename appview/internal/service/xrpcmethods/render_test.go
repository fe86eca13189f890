package xrpcmethods

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lexview/lexview/storage"
)

func TestInspect(t *testing.T) {
	cases := []struct {
		in                       string
		served, typ, blob, plain bool
	}{
		{`{"$type":"a.b.c","text":"hi"}`, false, true, false, true},
		{`{"$type":"a.b.c","reply":{"root":{"uri":"at://x","cid":"y"}}}`, false, true, false, true},
		{`{"text":"{\"uri\": 1}","facets":[{"features":[{"$type":"x"}]}]}`, false, false, false, true},
		{`{"uri":"mine","$type":"a.b.c"}`, true, true, false, true},
		{`{"$type":"a.b.c","cid":"mine"}`, true, true, false, true},
		{`{"$type":"a.b.c","subject":{"uri":"at://x","cid":"y"}}`, false, true, false, true},
		{`{"$type":"a.b.c","embed":{"images":[{"image":{"$type":"blob","mimeType":"image/png"}}]}}`, false, true, true, true},
		{`{"$type":"a.b.c","text":"mimeType","tags":["mimeType"]}`, false, true, false, true},
		{`{"$type":"a.b.c","list":[{"a":1},{"mimeType":"x"}]}`, false, true, true, true},
		{`{"$type":"a.b.c","t":"\\","u":"end\\\""}`, false, true, false, true},
		{`{"\u0075ri":"escaped"}`, false, false, false, false},
		{`{"a":{"mime\u0054ype":"escaped, nested"}}`, false, false, false, false},
		{`{"a":"unterminated`, false, false, false, false},
		{`{"a":"x\"`, false, false, false, false},
		{`[1,2]`, false, false, false, false},
		{`{"a":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}`, false, false, false, false},
	}
	for _, c := range cases {
		got := inspect([]byte(c.in))
		want := recordShape{served: c.served, typed: c.typ, blob: c.blob, plain: c.plain}
		if got != want {
			t.Errorf("%s: got %+v, want %+v", c.in, got, want)
		}
	}
}

func TestAppendRecordShapes(t *testing.T) {
	for _, raw := range []string{
		`{"$type":"app.test.post","reply":{"root":{"uri":"at://did:plc:x/app.test.post/1","cid":"c"}}}`,
		`{"text":"no top-level type","facets":[{"features":[{"$type":"app.test.facet"}]}]}`,
		`{"$type":"app.test.post","uri":"the record's own uri field"}`,
		`{"$type":"app.test.post","cid":"the record's own cid field"}`,
		`{"$type":"app.test.post"}`,
		` {"$type":"app.test.post","text":"spaces"} `,
	} {
		rec := storage.Record{URI: "at://did:plc:a/app.test.post/k", DID: "did:plc:a", Collection: "app.test.post",
			CID: "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm", Value: json.RawMessage(raw)}
		view := storage.RecordView{URI: []byte(rec.URI), CID: []byte(rec.CID), Value: rec.Value}
		out, err := appendRecord(nil, view, rec.Collection, nil)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		var got map[string]any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%s: output is not JSON: %s", raw, out)
		}
		// uri and cid, the strong reference; a record's own top-level cid
		// field is its data and is kept.
		var orig0 map[string]any
		json.Unmarshal([]byte(raw), &orig0)
		wantCID := any(rec.CID)
		if own, ok := orig0["cid"]; ok {
			wantCID = own
		}
		if got["uri"] != rec.URI || got["cid"] != wantCID || got["$type"] == nil {
			t.Errorf("%s: served %s", raw, out)
		}
		var orig map[string]any
		json.Unmarshal([]byte(raw), &orig)
		for k := range orig {
			if k != "uri" && k != "cid" && got[k] == nil {
				t.Errorf("%s: lost field %s", raw, k)
			}
		}
	}
}
