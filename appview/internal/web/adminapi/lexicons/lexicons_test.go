package lexicons_test

import (
	"fmt"
	"testing"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

const (
	recordDoc = `{"lexicon":1,"id":"app.test.post","defs":{"main":{"type":"record","key":"tid","record":{"type":"object","properties":{"text":{"type":"string"}}}}}}`
	queryDoc  = `{"lexicon":1,"id":"app.test.listPosts","defs":{"main":{"type":"query"}}}`
)

func raw(s string) map[string]any { return map[string]any{"lexicon_json": rawJSON(s)} }

type rawJSON string

func (r rawJSON) MarshalJSON() ([]byte, error) { return []byte(r), nil }

func TestLexiconEndpoints(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		su := env.Bootstrap(t)

		r := su.Do(t, "POST", "/admin/lexicons", raw(recordDoc))
		if r.Status != 201 {
			t.Fatalf("create: %d %s", r.Status, r.Raw)
		}
		if body := r.Object(t); body["id"] != "app.test.post" || body["revision"] != float64(1) {
			t.Fatalf("create body: %v", body)
		}
		r = su.Do(t, "POST", "/admin/lexicons", map[string]any{"lexicon_json": rawJSON(recordDoc), "backfill": false})
		if r.Status != 200 || r.Object(t)["revision"] != float64(2) {
			t.Fatalf("upsert: %d %s", r.Status, r.Raw)
		}
		// A document sent as a JSON string is accepted too.
		r = su.Do(t, "POST", "/admin/lexicons", map[string]any{
			"lexicon_json": queryDoc, "target_collection": "app.test.post", "script": "function handle() return {} end",
		})
		if r.Status != 201 {
			t.Fatalf("query lexicon: %d %s", r.Status, r.Raw)
		}

		var list []map[string]any
		su.Do(t, "GET", "/admin/lexicons", nil).JSON(t, &list)
		if len(list) != 2 || list[0]["id"] != "app.test.listPosts" || list[1]["lexicon_type"] != "record" ||
			list[1]["backfill"] != false || list[0]["target_collection"] != "app.test.post" {
			t.Fatalf("list: %v", list)
		}
		detail := su.Do(t, "GET", "/admin/lexicons/app.test.listPosts", nil).Object(t)
		if detail["lexicon_json"].(map[string]any)["id"] != "app.test.listPosts" || detail["script"] == nil ||
			detail["revision"] != float64(1) || detail["created_at"] == nil {
			t.Fatalf("detail: %v", detail)
		}
		if r := su.Do(t, "GET", "/admin/lexicons/app.test.nope", nil); r.Status != 404 {
			t.Fatalf("missing: %d", r.Status)
		}

		// The route is live at once, and gone at once after delete.
		client, _ := env.NewClient(t, apiclients.NewClient{})
		if r := env.Do(t, "GET", "/xrpc/app.test.listPosts", nil, "X-Client-Key", client.Key); r.Status != 200 {
			t.Fatalf("new route: %d %s", r.Status, r.Raw)
		}
		if r := su.Do(t, "DELETE", "/admin/lexicons/app.test.listPosts", nil); r.Status != 204 {
			t.Fatalf("delete: %d %s", r.Status, r.Raw)
		}
		if r := env.Do(t, "GET", "/xrpc/app.test.listPosts", nil, "X-Client-Key", client.Key); r.Status != 404 || r.Error(t) != "method not found" {
			t.Fatalf("deleted route: %d %s", r.Status, r.Raw)
		}
		if r := su.Do(t, "DELETE", "/admin/lexicons/app.test.listPosts", nil); r.Status != 404 {
			t.Fatalf("delete again: %d", r.Status)
		}

		// Audit trail.
		events, _, err := env.Store.ListEvents(t.Context(), storage.EventFilter{Category: "lexicon", Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, e := range events {
			types = append(types, e.Type)
			if e.ActorDID != su.Account.DID.String() {
				t.Errorf("event %s actor %q", e.Type, e.ActorDID)
			}
		}
		want := []string{"lexicon.deleted", "lexicon.created", "lexicon.updated", "lexicon.created"}
		if len(types) != len(want) {
			t.Fatalf("events %v, want %v", types, want)
		}
		for i := range want {
			if types[i] != want[i] {
				t.Fatalf("events %v, want %v", types, want)
			}
		}
	})
}

func TestLexiconBadInput(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		su := env.Bootstrap(t)
		cases := map[string]any{
			"malformed body":  []byte(`{"lexicon_json": `),
			"no document":     map[string]any{"backfill": true},
			"null document":   map[string]any{"lexicon_json": nil},
			"missing id":      raw(`{"lexicon":1,"defs":{}}`),
			"lexicon 2":       raw(`{"lexicon":2,"id":"app.test.x","defs":{}}`),
			"bad nsid":        raw(`{"lexicon":1,"id":"nope","defs":{}}`),
			"bad schema":      raw(`{"lexicon":1,"id":"app.test.x","defs":{"main":{"type":"nonsense"}}}`),
			"bad target":      map[string]any{"lexicon_json": rawJSON(queryDoc), "target_collection": "not an nsid"},
			"string not json": map[string]any{"lexicon_json": "{not json"},
			"trailing data":   []byte(`{"lexicon_json": {"lexicon":1,"id":"app.test.x","defs":{}}} {}`),
		}
		for name, body := range cases {
			r := su.Do(t, "POST", "/admin/lexicons", body)
			if r.Status != 400 || r.Error(t) == "" {
				t.Errorf("%s: %d %s", name, r.Status, r.Raw)
			}
		}
		if r := su.Do(t, "POST", "/admin/lexicons", raw(`{"lexicon":1,"id":"app.test.x","defs":{}}`)); r.Status != 201 {
			t.Fatalf("defs-only lexicon: %d %s", r.Status, r.Raw)
		}
	})
}

// TestLexiconIndexes: a record lexicon upload declares the field indexes
// it names on its collection; an index that is refused refuses the
// upload before anything is stored; declaring them needs indexes:manage.
func TestLexiconIndexes(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		su := env.Bootstrap(t)
		upload := func(a *testenv.Admin, doc string, indexes ...map[string]any) testenv.Response {
			return a.Do(t, "POST", "/admin/lexicons", map[string]any{"lexicon_json": rawJSON(doc), "backfill": false, "indexes": indexes})
		}
		refused := []struct {
			doc     string
			indexes []map[string]any
			err     string
		}{
			{recordDoc, []map[string]any{{"path": "text"}, {"path": "a..b"}},
				`indexes[1]: path "a..b" is not a field path: expected a name at offset 2 (names hold letters, digits, '_', '$' and '-')`},
			{recordDoc, []map[string]any{{"path": "text", "kind": "btree"}}, "indexes[0]: kind must be value or text"},
			{recordDoc, []map[string]any{{"kind": "value"}}, "indexes[0]: path is required"},
			{queryDoc, []map[string]any{{"path": "text"}}, "indexes are declared with record lexicons only"},
			{`{"lexicon":1,"id":"nope","defs":{}}`, []map[string]any{{"path": "text"}}, `invalid NSID "nope"`},
		}
		for _, c := range refused {
			if r := upload(su, c.doc, c.indexes...); r.Status != 400 || r.Error(t) != c.err {
				t.Errorf("%v: %d %s, want 400 %q", c.indexes, r.Status, r.Raw, c.err)
			}
		}
		var many []map[string]any
		for i := range storage.MaxFieldIndexes + 1 {
			many = append(many, map[string]any{"path": fmt.Sprintf("f%d", i)})
		}
		if r := upload(su, recordDoc, many...); r.Status != 400 || r.Error(t) != fmt.Sprintf(
			"collection app.test.post would have %d field indexes, more than the %d it may have", storage.MaxFieldIndexes+1, storage.MaxFieldIndexes) {
			t.Errorf("too many indexes: %d %s", r.Status, r.Raw)
		}
		if r := su.Do(t, "GET", "/admin/lexicons/app.test.post", nil); r.Status != 404 {
			t.Fatalf("a refused upload stored its lexicon: %d %s", r.Status, r.Raw)
		}

		// Uploading lexicons does not grant declaring indexes.
		uploader := env.AddAdmin(t, admins.LexiconsCreate, admins.LexiconsRead)
		if r := upload(uploader, recordDoc, map[string]any{"path": "text"}); r.Status != 403 || r.Error(t) != "insufficient permissions" {
			t.Fatalf("without indexes:manage: %d %s", r.Status, r.Raw)
		}

		r := upload(su, recordDoc, map[string]any{"path": "text"}, map[string]any{"path": "createdAt", "kind": "value"}, map[string]any{"path": "text"})
		if r.Status != 201 {
			t.Fatalf("upload: %d %s", r.Status, r.Raw)
		}
		var body struct {
			ID      string `json:"id"`
			Indexes []struct {
				ID         int64  `json:"id"`
				Collection string `json:"collection"`
				Path       string `json:"path"`
				Kind       string `json:"kind"`
				State      string `json:"state"`
			} `json:"indexes"`
		}
		r.JSON(t, &body)
		if len(body.Indexes) != 3 || body.Indexes[0].Path != "text" || body.Indexes[0].Collection != "app.test.post" ||
			body.Indexes[0].Kind != "value" || body.Indexes[1].Path != "createdAt" || body.Indexes[2].ID != body.Indexes[0].ID {
			t.Fatalf("upload answer: %s", r.Raw)
		}
		list, err := env.App.Indexes().List(t.Context(), "app.test.post")
		if err != nil || len(list) != 2 {
			t.Fatalf("indexes after the upload: %+v %v", list, err)
		}
		// An upload without indexes changes none.
		if r := upload(uploader, recordDoc); r.Status != 200 {
			t.Fatalf("upload without indexes: %d %s", r.Status, r.Raw)
		}
		if list, err := env.App.Indexes().List(t.Context(), "app.test.post"); err != nil || len(list) != 2 {
			t.Fatalf("indexes after a plain upload: %+v %v", list, err)
		}
	})
}
