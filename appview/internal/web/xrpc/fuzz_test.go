package xrpc_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/service/reads"
	"github.com/lexview/lexview/appview/internal/service/xrpcmethods"
	"github.com/lexview/lexview/appview/internal/web/xrpc"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// newQueryMux serves one query lexicon over a real SQLite store holding a
// few records.
func newQueryMux(t testing.TB) http.Handler {
	store := storagetest.SQLite(t)
	reg := lexicon.NewRegistry(store)
	doc := `{"lexicon":1,"id":"app.test.getPosts","defs":{"main":{"type":"query"}}}`
	if _, _, err := reg.Put(context.Background(), lexicon.Upload{Document: json.RawMessage(doc), TargetCollection: "app.test.post"}); err != nil {
		t.Fatal(err)
	}
	var ops []storage.RecordOp
	for i, rkey := range []string{"3kaaa", "3kbbb", "3kccc"} {
		ops = append(ops, storage.RecordOp{Record: storagetest.Rec("did:plc:alice", "app.test.post", rkey, time.Unix(int64(1000+i), 0), nil)})
	}
	if err := store.ApplyBatch(context.Background(), storage.Batch{Ops: ops}); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	calls := xrpcmethods.New(xrpcmethods.Options{Reads: reads.New(store, nil)})
	mux.Handle("/xrpc/{nsid}", xrpc.New(xrpc.Options{Lexicons: reg, Calls: calls}))
	return mux
}

// FuzzQueryParameters drives the default query with arbitrary AT URIs,
// limits, DIDs and cursors: every answer is 200, 400 or 404 with JSON.
func FuzzQueryParameters(f *testing.F) {
	f.Add("at://did:plc:alice/app.test.post/3kaaa", "", "", "")
	f.Add("at://alice.test/app.test.post/3kaaa", "", "", "")
	f.Add("at://did:plc:alice/app.test.post", "", "", "")
	f.Add("at://did:plc:alice/app.test.post/3kaaa#frag", "", "", "")
	f.Add("", "2", "did:plc:alice", "AQ")
	f.Add("", "100", "", "")
	f.Add("", "-1", "did:web:example.com", "%%")
	h := newQueryMux(f)
	f.Fuzz(func(t *testing.T, uri, limit, did, cursor string) {
		q := url.Values{}
		if uri != "" {
			q.Set("uri", uri)
		}
		if limit != "" {
			q.Set("limit", limit)
		}
		if did != "" {
			q.Set("did", did)
		}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		req := httptest.NewRequest("GET", "/xrpc/app.test.getPosts?"+q.Encode(), nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case 200, 400, 404:
		default:
			t.Fatalf("%s: status %d: %s", req.URL, rec.Code, rec.Body)
		}
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("%s: body is not JSON: %q", req.URL, rec.Body)
		}
		if rec.Code != 200 {
			if msg, _ := body["error"].(string); msg == "" {
				t.Fatalf("%s: error body without message: %s", req.URL, rec.Body)
			}
		}
	})
}
