package xrpc

import (
	"encoding/json"
	"testing"

	"github.com/lexview/lexview/storage"
)

func TestTopLevelKeys(t *testing.T) {
	cases := []struct {
		in                 string
		served, typ, plain bool
	}{
		{`{"$type":"a.b.c","text":"hi"}`, false, true, true},
		{`{"$type":"a.b.c","reply":{"root":{"uri":"at://x","cid":"y"}}}`, false, true, true},
		{`{"text":"{\"uri\": 1}","facets":[{"features":[{"$type":"x"}]}]}`, false, false, true},
		{`{"uri":"mine","$type":"a.b.c"}`, true, true, true},
		{`{"$type":"a.b.c","cid":"mine"}`, true, true, true},
		{`{"$type":"a.b.c","subject":{"uri":"at://x","cid":"y"}}`, false, true, true},
		{`{"\u0075ri":"escaped"}`, false, false, false},
		{`{"a":"unterminated`, false, false, false},
		{`[1,2]`, false, false, false},
	}
	for _, c := range cases {
		served, typ, plain := topLevelKeys([]byte(c.in))
		if served != c.served || typ != c.typ || plain != c.plain {
			t.Errorf("%s: got %v %v %v, want %v %v %v", c.in, served, typ, plain, c.served, c.typ, c.plain)
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
		out, err := appendRecord(nil, rec, nil)
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
