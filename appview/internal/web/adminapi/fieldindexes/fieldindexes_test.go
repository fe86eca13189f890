package fieldindexes_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/fieldindexes"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	adminfieldindexes "github.com/lexview/lexview/appview/internal/web/adminapi/fieldindexes"
	"github.com/lexview/lexview/appview/internal/web/adminapi/internal/admintest"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

const likes = "app.test.like"

// index is the admin API's shape of an index.
type index struct {
	ID         int64    `json:"id"`
	Collection string   `json:"collection"`
	Path       string   `json:"path"`
	Kind       string   `json:"kind"`
	State      string   `json:"state"`
	Done       *int64   `json:"done"`
	Total      *int64   `json:"total"`
	Progress   *float64 `json:"progress"`
	Error      *string  `json:"error"`
	CreatedAt  string   `json:"created_at"`
	UpdatedAt  string   `json:"updated_at"`
}

func serve(t *testing.T, store storage.Store) (*admintest.Server, *fieldindexes.Service) {
	var svc *fieldindexes.Service
	srv := admintest.New(t, store, func(m *adminapi.Mux, w *admintest.World) {
		svc = fieldindexes.New(fieldindexes.Options{Store: w.Store, Events: w.Events, Logger: w.Logger,
			Suggest: fieldindexes.SuggestOptions{MinRecords: -1}})
		adminfieldindexes.Mount(m, svc)
	}, nil)
	return srv, svc
}

func TestIndexEndpoints(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		srv, _ := serve(t, open(t))
		c := srv.Caller(t, admins.IndexesRead, admins.IndexesManage)

		r := c.Do(t, "POST", "/admin/indexes", map[string]any{"collection": likes, "path": "subject.uri", "kind": "value"})
		admintest.Expect(t, r, 201, "")
		var idx index
		r.JSON(t, &idx)
		if idx.ID <= 0 || idx.Collection != likes || idx.Path != "subject.uri" || idx.Kind != "value" || idx.State != "building" ||
			idx.Done == nil || idx.Total == nil || idx.Progress == nil || *idx.Progress != 0 || idx.Error != nil || idx.CreatedAt == "" || idx.UpdatedAt == "" {
			t.Fatalf("declared: %s", r.Raw)
		}
		// Declared again, without a kind (value): the same index, 200.
		r = c.Do(t, "POST", "/admin/indexes", map[string]any{"collection": likes, "path": "subject.uri"})
		admintest.Expect(t, r, 200, "")
		var again index
		r.JSON(t, &again)
		if again.ID != idx.ID {
			t.Fatalf("declared again: %s", r.Raw)
		}
		admintest.Expect(t, c.Do(t, "POST", "/admin/indexes", map[string]any{"collection": "app.test.post", "path": "text", "kind": "text"}), 201, "")

		var list struct {
			Indexes []index `json:"indexes"`
		}
		r = c.Do(t, "GET", "/admin/indexes", nil)
		admintest.Expect(t, r, 200, "")
		r.JSON(t, &list)
		if len(list.Indexes) != 2 || list.Indexes[0].Collection != likes || list.Indexes[1].Kind != "text" {
			t.Fatalf("list: %s", r.Raw)
		}
		r = c.Do(t, "GET", "/admin/indexes?collection=app.test.post", nil)
		admintest.Expect(t, r, 200, "")
		r.JSON(t, &list)
		if len(list.Indexes) != 1 || list.Indexes[0].Path != "text" {
			t.Fatalf("list of a collection: %s", r.Raw)
		}
		admintest.Expect(t, c.Do(t, "GET", "/admin/indexes?collection=nope", nil), 400, "collection must be an NSID")

		path := fmt.Sprintf("/admin/indexes/%d", idx.ID)
		r = c.Do(t, "GET", path, nil)
		admintest.Expect(t, r, 200, "")
		var got index
		r.JSON(t, &got)
		if got.ID != idx.ID || got.Path != "subject.uri" {
			t.Fatalf("get: %s", r.Raw)
		}
		admintest.Expect(t, c.Do(t, "GET", "/admin/indexes/999999", nil), 404, "field index not found")
		admintest.Expect(t, c.Do(t, "GET", "/admin/indexes/abc", nil), 404, "field index not found")

		admintest.Expect(t, c.Do(t, "DELETE", path, nil), 204, "")
		admintest.Expect(t, c.Do(t, "GET", path, nil), 404, "field index not found")
		admintest.Expect(t, c.Do(t, "DELETE", path, nil), 404, "field index not found")
		admintest.Expect(t, c.Do(t, "DELETE", "/admin/indexes/abc", nil), 404, "field index not found")

		var types []string
		for _, e := range srv.Events(t, "field_index") {
			if e.ActorDID != c.DID || e.Subject == "" {
				t.Errorf("event %s by %q on %q", e.Type, e.ActorDID, e.Subject)
			}
			types = append(types, e.Type)
		}
		slices.Sort(types)
		if fmt.Sprint(types) != "[field_index.declared field_index.declared field_index.dropped]" {
			t.Errorf("events %v", types)
		}
	})
}

func TestIndexRefusals(t *testing.T) {
	t.Parallel()
	srv, _ := serve(t, storagetest.SQLite(t))
	c := srv.Caller(t, admins.IndexesManage)
	cases := []struct {
		body any
		err  string
	}{
		{map[string]any{"path": "a"}, "collection is required"},
		{map[string]any{"collection": "not an nsid", "path": "a"}, "collection must be an NSID"},
		{map[string]any{"collection": likes}, "path is required"},
		{map[string]any{"collection": likes, "path": "a[x]"}, `path "a[x]" is not a field path: expected [n] at offset 1`},
		{map[string]any{"collection": likes, "path": "a", "kind": "fulltext"}, "kind must be value or text"},
		{map[string]any{"collection": 5}, "invalid request body"},
		{[]byte(`{"collection": `), "invalid request body"},
	}
	for _, tc := range cases {
		admintest.Expect(t, c.Do(t, "POST", "/admin/indexes", tc.body), 400, tc.err)
	}
	for i := range storage.MaxFieldIndexes {
		admintest.Expect(t, c.Do(t, "POST", "/admin/indexes", map[string]any{"collection": likes, "path": fmt.Sprintf("f%d", i)}), 201, "")
	}
	admintest.Expect(t, c.Do(t, "POST", "/admin/indexes", map[string]any{"collection": likes, "path": "one.more"}), 400,
		fmt.Sprintf("collection %s would have %d field indexes, more than the %d it may have", likes, storage.MaxFieldIndexes+1, storage.MaxFieldIndexes))
}

// TestIndexPermissions: reading needs indexes:read, declaring and
// dropping indexes:manage.
func TestIndexPermissions(t *testing.T) {
	t.Parallel()
	srv, _ := serve(t, storagetest.SQLite(t))
	reader := srv.Caller(t, admins.IndexesRead)
	manager := srv.Caller(t, admins.IndexesManage)
	body := map[string]any{"collection": likes, "path": "subject.uri"}
	admintest.Expect(t, reader.Do(t, "POST", "/admin/indexes", body), 403, "insufficient permissions")
	r := manager.Do(t, "POST", "/admin/indexes", body)
	admintest.Expect(t, r, 201, "")
	var idx index
	r.JSON(t, &idx)
	path := fmt.Sprintf("/admin/indexes/%d", idx.ID)
	for _, p := range []string{"/admin/indexes", path, "/admin/indexes/suggestions"} {
		admintest.Expect(t, reader.Do(t, "GET", p, nil), 200, "")
		admintest.Expect(t, manager.Do(t, "GET", p, nil), 403, "insufficient permissions")
	}
	admintest.Expect(t, reader.Do(t, "DELETE", path, nil), 403, "insufficient permissions")
	admintest.Expect(t, manager.Do(t, "DELETE", path, nil), 204, "")
}

// TestIndexSuggestions: the scans the service observed are listed, the
// most frequent first; a declared index removes its suggestion.
func TestIndexSuggestions(t *testing.T) {
	t.Parallel()
	srv, svc := serve(t, storagetest.SQLite(t))
	c := srv.Caller(t, admins.IndexesRead, admins.IndexesManage)
	var out struct {
		Suggestions []struct {
			Collection string `json:"collection"`
			Field      string `json:"field"`
			Kind       string `json:"kind"`
			Count      int64  `json:"count"`
			Records    *int64 `json:"records"`
			FirstSeen  string `json:"first_seen"`
			LastSeen   string `json:"last_seen"`
		} `json:"suggestions"`
	}
	r := c.Do(t, "GET", "/admin/indexes/suggestions", nil)
	admintest.Expect(t, r, 200, "")
	if string(r.Raw) != `{"suggestions":[]}`+"\n" && string(r.Raw) != `{"suggestions":[]}` {
		t.Fatalf("no suggestions: %s", r.Raw)
	}
	svc.ObserveScan(storage.ScanHint{Collection: likes, Fields: []string{"createdAt"}})
	for range 2 {
		svc.ObserveScan(storage.ScanHint{Collection: likes, Fields: []string{"subject.uri", "createdAt"}})
	}
	r = c.Do(t, "GET", "/admin/indexes/suggestions", nil)
	admintest.Expect(t, r, 200, "")
	r.JSON(t, &out)
	if len(out.Suggestions) != 2 {
		t.Fatalf("suggestions: %s", r.Raw)
	}
	first := out.Suggestions[0]
	if first.Collection != likes || first.Field != "subject.uri" || first.Kind != "value" || first.Count != 2 ||
		first.FirstSeen == "" || first.LastSeen == "" || out.Suggestions[1].Field != "createdAt" {
		t.Fatalf("suggestions: %s", r.Raw)
	}
	admintest.Expect(t, c.Do(t, "POST", "/admin/indexes", map[string]any{"collection": likes, "path": "subject.uri"}), 201, "")
	r = c.Do(t, "GET", "/admin/indexes/suggestions", nil)
	r.JSON(t, &out)
	if len(out.Suggestions) != 1 || out.Suggestions[0].Field != "createdAt" {
		t.Fatalf("suggestions after the declaration: %s", r.Raw)
	}
}
