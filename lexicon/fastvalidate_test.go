package lexicon

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lexview/lexview/storage/storagetest"
)

// The fast path's contract: it may give up on any record, but a record it
// accepts must be one indigo's validator accepts. These tests hold it to
// that on hand-picked records and under fuzzing, and check that the usual
// shapes of network data do take the fast path.

// fastDocs cover every lexicon type: a post-like record with unions,
// refs, facets and blobs, and a record of every field type and constraint.
var fastDocs = []string{
	`{"lexicon":1,"id":"app.fast.post","defs":{
	  "main":{"type":"record","key":"tid","record":{"type":"object","required":["text","createdAt"],"properties":{
	    "text":{"type":"string","maxLength":3000,"maxGraphemes":300},
	    "createdAt":{"type":"string","format":"datetime"},
	    "langs":{"type":"array","maxLength":3,"items":{"type":"string","format":"language"}},
	    "facets":{"type":"array","items":{"type":"ref","ref":"#facet"}},
	    "reply":{"type":"ref","ref":"#replyRef"},
	    "embed":{"type":"union","refs":["#images","#record","app.elsewhere.embed"]},
	    "labels":{"type":"union","closed":true,"refs":["#selfLabels"]},
	    "tags":{"type":"array","maxLength":8,"items":{"type":"string","maxLength":640,"maxGraphemes":64}}
	  }}},
	  "replyRef":{"type":"object","required":["root","parent"],"properties":{
	    "root":{"type":"ref","ref":"app.fast.strongRef"},"parent":{"type":"ref","ref":"app.fast.strongRef"}}},
	  "facet":{"type":"object","required":["index","features"],"properties":{
	    "index":{"type":"ref","ref":"#byteSlice"},
	    "features":{"type":"array","items":{"type":"union","refs":["#mention","#link","#tag"]}}}},
	  "byteSlice":{"type":"object","required":["byteStart","byteEnd"],"properties":{
	    "byteStart":{"type":"integer","minimum":0},"byteEnd":{"type":"integer","minimum":0}}},
	  "mention":{"type":"object","required":["did"],"properties":{"did":{"type":"string","format":"did"}}},
	  "link":{"type":"object","required":["uri"],"properties":{"uri":{"type":"string","format":"uri"}}},
	  "tag":{"type":"object","required":["tag"],"properties":{"tag":{"type":"string","maxLength":640,"maxGraphemes":64}}},
	  "images":{"type":"object","required":["images"],"properties":{"images":{"type":"array","maxLength":4,"items":{"type":"ref","ref":"#image"}}}},
	  "image":{"type":"object","required":["image","alt"],"properties":{
	    "image":{"type":"blob","accept":["image/*"],"maxSize":1000000},"alt":{"type":"string"}}},
	  "record":{"type":"object","required":["record"],"properties":{"record":{"type":"ref","ref":"app.fast.strongRef"}}},
	  "selfLabels":{"type":"object","required":["values"],"properties":{"values":{"type":"array","items":{"type":"ref","ref":"#selfLabel"}}}},
	  "selfLabel":{"type":"object","required":["val"],"properties":{"val":{"type":"string","maxLength":128}}}
	}}`,
	`{"lexicon":1,"id":"app.fast.strongRef","defs":{"main":{"type":"object","required":["uri","cid"],"properties":{
	  "uri":{"type":"string","format":"at-uri"},"cid":{"type":"string","format":"cid"}}}}}`,
	`{"lexicon":1,"id":"app.fast.every","defs":{
	  "main":{"type":"record","key":"any","record":{"type":"object","required":["s"],"nullable":["maybe"],"properties":{
	    "s":{"type":"string","minLength":1,"maxLength":10,"minGraphemes":1,"maxGraphemes":5},
	    "konst":{"type":"string","const":"fixed"},
	    "choice":{"type":"string","enum":["a","b"]},
	    "known":{"type":"string","knownValues":["x"]},
	    "flag":{"type":"boolean","const":true},
	    "b":{"type":"boolean"},
	    "n":{"type":"integer","minimum":-5,"maximum":5},
	    "ni":{"type":"integer","enum":[1,2,3]},
	    "nc":{"type":"integer","const":7},
	    "maybe":{"type":"string","maxLength":3},
	    "arr":{"type":"array","minLength":1,"maxLength":2,"items":{"type":"integer"}},
	    "obj":{"type":"ref","ref":"#inner"},
	    "any":{"type":"unknown"},
	    "link":{"type":"cid-link"},
	    "raw":{"type":"bytes","maxLength":4},
	    "blob":{"type":"blob"},
	    "pic":{"type":"blob","accept":["image/png"],"maxSize":100},
	    "open":{"type":"union","refs":["#inner"]},
	    "self":{"type":"ref","ref":"app.fast.every#tree"},
	    "gone":{"type":"ref","ref":"app.missing.thing"},
	    "tok":{"type":"ref","ref":"#tok"},
	    "ident":{"type":"string","format":"at-identifier"},
	    "uri":{"type":"string","format":"at-uri"},
	    "cid":{"type":"string","format":"cid"},
	    "dt":{"type":"string","format":"datetime"},
	    "did":{"type":"string","format":"did"},
	    "handle":{"type":"string","format":"handle"},
	    "nsid":{"type":"string","format":"nsid"},
	    "web":{"type":"string","format":"uri"},
	    "lang":{"type":"string","format":"language"},
	    "tid":{"type":"string","format":"tid"},
	    "rkey":{"type":"string","format":"record-key"}
	  }}},
	  "inner":{"type":"object","required":["x"],"properties":{"x":{"type":"integer"},"cid":{"type":"string"},"mimeType":{"type":"string"}}},
	  "tree":{"type":"object","properties":{"children":{"type":"array","items":{"type":"ref","ref":"#tree"}},"v":{"type":"integer"}}},
	  "tok":{"type":"token"}
	}}`,
}

const (
	cidA = "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm"
	cidB = "bafkreibme22gw2h7y2h7tg2fhqotaqjucnbc24deqo72b6mkl2egezxhvy"
	didA = "did:plc:ewvi7nxzyoun6zhxrhs64oiz"
)

func fastSnapshot(t testing.TB) *Snapshot {
	t.Helper()
	reg := NewRegistry(storagetest.SQLite(t))
	for _, doc := range fastDocs {
		if _, _, err := reg.Put(context.Background(), Upload{Document: json.RawMessage(doc)}); err != nil {
			t.Fatalf("upload: %v", err)
		}
	}
	return reg.Snapshot()
}

// commonRecords are shapes network data has; each must take the fast path.
var commonRecords = map[string][]string{
	"app.fast.post": {
		`{"$type":"app.fast.post","text":"hello world","createdAt":"2026-01-02T03:04:05.678Z","langs":["en"]}`,
		`{"text":"no $type","createdAt":"2026-01-02T03:04:05Z"}`,
		`{"$type":"app.fast.post","text":"tabs\tand \"quotes\" and \u00e9 and \ud83d\ude00 escaped\n","createdAt":"2026-01-02T03:04:05+02:00"}`,
		`{"$type":"app.fast.post","text":"Ünïcödé ✓ 日本語のテキスト 🎉","createdAt":"2026-01-02T03:04:05.123456Z","langs":["ja","en-US"],"tags":["x"]}`,
		`{"$type":"app.fast.post","text":"` + strings.Repeat("long ascii ", 27) + `","createdAt":"2026-01-02T03:04:05Z"}`,
		`{"$type":"app.fast.post","text":"reply","createdAt":"2026-01-02T03:04:05Z","reply":{"root":{"uri":"at://` + didA + `/app.fast.post/3kabcdefghij2","cid":"` + cidA + `"},"parent":{"cid":"` + cidA + `","uri":"at://alice.example.com/app.fast.post/3kabcdefghij2"}}}`,
		`{"$type":"app.fast.post","text":"@alice #tag https://x.example","createdAt":"2026-01-02T03:04:05Z","facets":[{"index":{"byteStart":0,"byteEnd":6},"features":[{"$type":"app.fast.post#mention","did":"` + didA + `"}]},{"features":[{"did":"x","$type":"app.other#thing"},{"tag":"tag","$type":"app.fast.post#tag"},{"uri":"https://x.example","$type":"app.fast.post#link"}],"index":{"byteStart":7,"byteEnd":11}}]}`,
		`{"$type":"app.fast.post","text":"pics","createdAt":"2026-01-02T03:04:05Z","embed":{"$type":"app.fast.post#images","images":[{"alt":"a cat","image":{"$type":"blob","ref":{"$link":"` + cidB + `"},"mimeType":"image/jpeg","size":123456}}]}}`,
		`{"$type":"app.fast.post","text":"quote","createdAt":"2026-01-02T03:04:05Z","embed":{"$type":"app.fast.post#record","record":{"uri":"at://` + didA + `/app.fast.post/3kabcdefghij2","cid":"` + cidA + `"}}}`,
		`{"$type":"app.fast.post","text":"external","createdAt":"2026-01-02T03:04:05Z","embed":{"$type":"app.unknown.embed","external":{"uri":"https://x","thumb":{"$type":"blob","ref":{"$link":"` + cidB + `"},"mimeType":"image/png","size":5}}}}`,
		`{"$type":"app.fast.post","text":"labelled","createdAt":"2026-01-02T03:04:05Z","labels":{"$type":"app.fast.post#selfLabels","values":[{"val":"nsfw"}]},"extra":{"nested":[1,-2,true,null,{"k":"v"}],"$link-ish":"no"}}`,
		` {"$type" : "app.fast.post" , "text" : "spaces" , "createdAt" : "2026-01-02T03:04:05Z" } `,
	},
	"app.fast.every": {
		`{"s":"abc"}`,
		`{"s":"✓✓","konst":"fixed","choice":"b","known":"y","flag":true,"b":false,"n":-5,"ni":3,"nc":7,"maybe":null,"arr":[1,2]}`,
		`{"s":"a","obj":{"x":1},"any":{"whatever":[1,{"$link":"` + cidA + `"}]},"link":{"$link":"` + cidA + `"},"blob":{"$type":"blob","ref":{"$link":"` + cidB + `"},"mimeType":"text/plain","size":0}}`,
		`{"s":"a","pic":{"size":100,"mimeType":"image/png","ref":{"$link":"` + cidB + `"},"$type":"blob"},"open":{"$type":"app.fast.every#inner","x":2},"gone":{"a":1}}`,
		`{"s":"a","self":{"children":[{"v":1},{"children":[{"children":[]}]}]}}`,
		`{"s":"a","ident":"alice.example.com","uri":"at://` + didA + `","cid":"` + cidA + `","dt":"2026-01-02T03:04:05.1Z","did":"did:web:example.com","handle":"a.b-c.example","nsid":"com.example.fooBar","web":"https://example.com/a?b","lang":"pt-BR","tid":"3kabcdefghij2","rkey":"self"}`,
		`{"s":"a","ident":"` + didA + `","uri":"at://alice.test/com.example.x/abc:def~_.-"}`,
	},
}

// edgeRecords must agree with indigo whichever path they take; many are
// invalid.
var edgeRecords = map[string][]string{
	"app.fast.post": {
		`{"$type":"app.fast.other","text":"wrong type","createdAt":"2026-01-02T03:04:05Z"}`,
		`{"$type":"app.fast.post","createdAt":"2026-01-02T03:04:05Z"}`,
		`{"$type":"app.fast.post","text":"` + strings.Repeat("é", 301) + `","createdAt":"2026-01-02T03:04:05Z"}`,
		`{"$type":"app.fast.post","text":"` + strings.Repeat("👍🏽", 300) + `","createdAt":"2026-01-02T03:04:05Z"}`,
		`{"$type":"app.fast.post","text":"` + strings.Repeat("👍🏽", 301) + `","createdAt":"2026-01-02T03:04:05Z"}`,
		`{"$type":"app.fast.post","text":"` + strings.Repeat("a\r\n", 150) + `","createdAt":"2026-01-02T03:04:05Z"}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02 03:04:05"}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02T03:04:05"}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02T03:04:05-00:00"}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-13-02T03:04:05Z"}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"0000-01-01T00:30:00+01:00"}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02T03:04:05Z","langs":["en","fr","de","it"]}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02T03:04:05Z","langs":["EN"]}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02T03:04:05Z","embed":{"images":[]}}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02T03:04:05Z","embed":{"$type":"app.fast.post#images","images":[{"alt":"a","image":{"$type":"blob","ref":{"$link":"` + cidB + `"},"mimeType":"video/mp4","size":1}}]}}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02T03:04:05Z","embed":{"$type":"app.fast.post#images","images":[{"alt":"a","image":{"$type":"blob","ref":{"$link":"` + cidB + `"},"mimeType":"image/png","size":1000001}}]}}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02T03:04:05Z","embed":{"$type":"app.fast.post#images","images":[{"alt":"a","image":{"cid":"` + cidB + `","mimeType":"image/png"}}]}}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02T03:04:05Z","embed":{"$type":"app.fast.post#images","images":[{"alt":"a","image":{"$type":"blob","ref":"` + cidB + `","mimeType":"image/png","size":1}}]}}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02T03:04:05Z","labels":{"$type":"app.other#labels","values":[]}}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02T03:04:05Z","reply":{"root":{"uri":"at://x","cid":"short"},"parent":{"uri":"at://x","cid":"` + cidA + `"}}}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02T03:04:05Z","reply":{"root":{"uri":"https://x","cid":"` + cidA + `"},"parent":{"uri":"at://x","cid":"` + cidA + `"}}}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02T03:04:05Z","facets":[{"index":{"byteStart":-1,"byteEnd":2},"features":[]}]}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02T03:04:05Z","facets":[{"index":{"byteStart":1.0,"byteEnd":2},"features":[]}]}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02T03:04:05Z","facets":[{"index":{"byteStart":1.5,"byteEnd":2},"features":[]}]}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02T03:04:05Z","facets":[{"index":{"byteStart":1e2,"byteEnd":2},"features":[]}]}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02T03:04:05Z","extra":1.5}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02T03:04:05Z","extra":{"$link":"nope"}}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02T03:04:05Z","extra":{"$link":"` + cidA + `","other":1}}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02T03:04:05Z","extra":{"$bytes":"aGVsbG8"}}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02T03:04:05Z","extra":{"$type":""}}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02T03:04:05Z","extra":{"$type":5}}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02T03:04:05Z","extra":{"$type":"blob","ref":{"$link":"` + cidB + `"},"mimeType":"a/b","size":"1"}}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02T03:04:05Z","extra":{"mimeType":"a/b","cid":"nope"}}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02T03:04:05Z","extra":"\ud800"}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02T03:04:05Z","extra":"` + "\xff" + `"}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02T03:04:05Z","text":"duplicate"}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02T03:04:05Z","$type":"app.fast.post"}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02T03:04:05Z"}trailing`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02T03:04:05Z",}`,
		`{"$type":"app.fast.post","text":"x","createdAt":"2026-01-02T03:04:05Z"`,
		`{"$type":"app.fast.post","text":null,"createdAt":"2026-01-02T03:04:05Z"}`,
		`{"$link":"` + cidA + `"}`,
		`{"mimeType":"text/plain","cid":"` + cidA + `"}`,
		`[]`, `"x"`, `null`, ``, `{}`,
	},
	"app.fast.every": {
		`{"s":""}`, `{"s":"abcdef"}`, `{"s":"abcdefghijk"}`, `{"s":"a","konst":"other"}`, `{"s":"a","choice":"c"}`,
		`{"s":"a","flag":false}`, `{"s":"a","b":"true"}`, `{"s":"a","n":6}`, `{"s":"a","n":-6}`, `{"s":"a","ni":4}`,
		`{"s":"a","nc":8}`, `{"s":"a","maybe":"toolong"}`, `{"s":"a","arr":[]}`, `{"s":"a","arr":[1,2,3]}`,
		`{"s":"a","arr":[1,"2"]}`, `{"s":"a","obj":{}}`, `{"s":"a","obj":{"x":"1"}}`, `{"s":"a","any":"string"}`,
		`{"s":"a","any":{"$link":"` + cidA + `"}}`, `{"s":"a","link":"` + cidA + `"}`, `{"s":"a","link":{"$link":"bad"}}`,
		`{"s":"a","raw":{"$bytes":"AAAA"}}`, `{"s":"a","raw":{"$bytes":"AAAAAAAA"}}`, `{"s":"a","blob":{"x":1}}`,
		`{"s":"a","blob":{"cid":"` + cidB + `","mimeType":"text/plain"}}`,
		`{"s":"a","pic":{"$type":"blob","ref":{"$link":"` + cidB + `"},"mimeType":"image/jpeg","size":1}}`,
		`{"s":"a","open":{"x":1}}`, `{"s":"a","open":{"$type":"app.fast.every#tree","v":"x"}}`,
		`{"s":"a","open":{"$type":"app.fast.every#inner","x":1,"$type":"app.nope"}}`,
		`{"s":"a","obj":{"x":1,"cid":"c","mimeType":"m"}}`, `{"s":"a","obj":{"x":1,"mimeType":"m"}}`,
		`{"s":"a","self":{"children":[{"v":"no"}]}}`, `{"s":"a","gone":"string"}`, `{"s":"a","tok":"app.fast.every#tok"}`,
		`{"s":"a","ident":"did:plc:"}`, `{"s":"a","ident":"-bad.example"}`, `{"s":"a","uri":"at://did:plc:abc/not-an-nsid"}`,
		`{"s":"a","uri":"at://did:plc:abc/com.example.x/"}`, `{"s":"a","uri":"at://did:plc:abc/com.example.x/a/b"}`,
		`{"s":"a","uri":"at://alice.test/com.example.x/a#frag"}`, `{"s":"a","cid":"QmbWqxBEKC3P8tqsKc98xmWNzrzDtRLMiMPL8wBuTGsMnR"}`,
		`{"s":"a","cid":"short"}`, `{"s":"a","dt":"2026-01-02T03:04:05.Z"}`, `{"s":"a","dt":"2026-01-02T03:04:05+0000"}`,
		`{"s":"a","dt":"2026-02-30T03:04:05Z"}`, `{"s":"a","dt":"2026-01-02T24:04:05Z"}`, `{"s":"a","did":"did:PLC:abc"}`,
		`{"s":"a","did":"did:plc:abc:"}`, `{"s":"a","handle":"localhost"}`, `{"s":"a","handle":"a.1com"}`,
		`{"s":"a","nsid":"com.example"}`, `{"s":"a","nsid":"com.example.foo-bar"}`, `{"s":"a","nsid":"1com.example.foo"}`,
		`{"s":"a","web":"not a uri"}`, `{"s":"a","lang":"e"}`, `{"s":"a","lang":"en-"}`, `{"s":"a","tid":"kabcdefghij23"}`,
		`{"s":"a","rkey":".."}`, `{"s":"a","rkey":"a/b"}`, `{"s":"a","n":12345678901234567890}`, `{"s":"a","n":-0}`,
		`{"s":"a","n":01}`, `{"s":"a","maybe":null,"maybe":"x"}`,
	},
}

// assertSound fails when the fast path accepts a record indigo rejects.
func assertSound(t *testing.T, snap *Snapshot, collection, rec string) (fast bool) {
	t.Helper()
	fast = fastValid(snap.catalog().records[collection], collection, []byte(rec))
	if err := snap.validateIndigo(collection, json.RawMessage(rec)); fast && err != nil {
		t.Errorf("fast path accepted a record indigo rejects (%v):\n%s", err, rec)
	}
	return fast
}

func TestFastValidationCommonRecordsTakeFastPath(t *testing.T) {
	snap := fastSnapshot(t)
	for collection, recs := range commonRecords {
		for _, rec := range recs {
			if !assertSound(t, snap, collection, rec) {
				t.Errorf("%s: common record missed the fast path (indigo: %v):\n%s", collection, snap.validateIndigo(collection, json.RawMessage(rec)), rec)
			}
		}
	}
}

func TestFastValidationEdgeRecordsAgreeWithIndigo(t *testing.T) {
	snap := fastSnapshot(t)
	fast := 0
	for collection, recs := range edgeRecords {
		for _, rec := range recs {
			if assertSound(t, snap, collection, rec) {
				fast++
			}
			// Whatever the path, the public answer is indigo's.
			want := snap.validateIndigo(collection, json.RawMessage(rec))
			if got := snap.ValidateRecord(collection, json.RawMessage(rec)); (got == nil) != (want == nil) {
				t.Errorf("ValidateRecord = %v, indigo = %v:\n%s", got, want, rec)
			}
		}
	}
	t.Logf("%d edge records took the fast path", fast)
}

func FuzzFastValidation(f *testing.F) {
	for _, recs := range []map[string][]string{commonRecords, edgeRecords} {
		for collection, list := range recs {
			for _, rec := range list {
				f.Add(collection == "app.fast.post", rec)
			}
		}
	}
	snap := fastSnapshot(f)
	f.Fuzz(func(t *testing.T, post bool, rec string) {
		collection := "app.fast.every"
		if post {
			collection = "app.fast.post"
		}
		assertSound(t, snap, collection, rec)
	})
}
