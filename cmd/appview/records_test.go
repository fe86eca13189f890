package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

const testCID = "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm"

func TestImportRecords(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		var b strings.Builder
		for i := range 2500 {
			fmt.Fprintf(&b, `{"uri":"at://did:plc:imp/app.test.post/k%04d","cid":%q,"record":{"$type":"app.test.post","n":%d}}`+"\n", i, testCID, i)
		}
		n, err := importRecords(context.Background(), store, strings.NewReader(b.String()), time.Now)
		if err != nil || n != 2500 {
			t.Fatalf("import: %d %v", n, err)
		}
		if c, _ := store.CountRecords(context.Background(), "app.test.post"); c != 2500 {
			t.Fatalf("stored %d", c)
		}
		for _, bad := range []string{
			`not json`,
			`{"uri":"at://did:plc:x/app.test.post","cid":"` + testCID + `","record":{}}`,
			`{"uri":"at://alice.test/app.test.post/k","cid":"` + testCID + `","record":{}}`,
			`{"uri":"at://did:plc:x/app.test.post/k","cid":"nope","record":{}}`,
			`{"uri":"at://did:plc:x/app.test.post/k","cid":"` + testCID + `","record":[1]}`,
		} {
			if _, err := importRecords(context.Background(), store, strings.NewReader(bad), time.Now); err == nil || !strings.Contains(err.Error(), "line 1") {
				t.Errorf("%s: %v", bad, err)
			}
		}
	})
}
