package backfilljobs_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lexview/lexview/internal/backfilltest"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// hostilePDS answers getLatestCommit, and listRecords with one page of
// records given as raw JSON text (the value of "records").
func hostilePDS(t *testing.T, records func(did string) string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/xrpc/com.atproto.sync.getLatestCommit":
			fmt.Fprintf(w, `{"cid":%q,"rev":"3kaaaaaaaaaa2"}`, backfilltest.CID)
		case "/xrpc/com.atproto.repo.listRecords":
			fmt.Fprintf(w, `{"records":[%s]}`, records(r.URL.Query().Get("repo")))
		default:
			w.WriteHeader(http.StatusNotImplemented)
			fmt.Fprint(w, `{"error":"MethodNotImplemented"}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestBackfillRefusesInvalidRecords: records a PDS lists with an invalid
// record key or AT URI, or a value that is not valid UTF-8 or holds a lone
// surrogate or NUL, are not indexed; the valid one is, and the job
// completes. On PostgreSQL such a value used to stall the writer (its
// batch never committed), and with it the job and live ingestion.
func TestBackfillRefusesInvalidRecords(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		w := setup(t, open(t), "")
		pds := hostilePDS(t, func(did string) string {
			rec := func(rkey, text string) string {
				return fmt.Sprintf(`{"uri":"at://%s/%s/%s","cid":%q,"value":{"$type":%q,"text":"%s"}}`,
					did, postNSID, rkey, backfilltest.CID, postNSID, text)
			}
			return strings.Join([]string{
				rec("ключ", "bad key"),
				rec("3kutf8", "bad \xff\xfe"),
				rec("3ksurrogate", `lone \udbff`),
				rec("3knul", `a\u0000b`),
				fmt.Sprintf(`{"uri":"at://did:evil/%s/3kevil","cid":%q,"value":{"$type":%q,"text":"x"}}`, postNSID, backfilltest.CID, postNSID),
				rec("3kgood", `fine \ud83d\ude00`),
			}, ",")
		})
		did := w.env.PLC.NewAccount(t, false, pds.URL).DID.String()
		id := w.create(t, map[string]any{"collection": postNSID, "did": did})
		done := w.wait(t, id, "completed")
		if done.Error != nil {
			t.Fatalf("job: %+v", done)
		}
		ctx := t.Context()
		if n, err := w.env.Store.CountRecords(ctx, postNSID); err != nil || n != 1 {
			t.Fatalf("%d records indexed (%v), want the valid one", n, err)
		}
		rec, err := w.env.Store.GetRecord(ctx, "at://"+did+"/"+postNSID+"/3kgood")
		if err != nil || lexicon.CheckRecordText(rec.Value) != nil {
			t.Fatalf("the valid record: %s %v", rec.Value, err)
		}
	})
}
