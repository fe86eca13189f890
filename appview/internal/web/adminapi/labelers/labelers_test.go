package labelers_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/labelers"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/adminapi/internal/admintest"
	adminlabelers "github.com/lexview/lexview/appview/internal/web/adminapi/labelers"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// labeler is the admin API's Labeler shape.
type labeler struct {
	DID       string `json:"did"`
	Status    string `json:"status"`
	Cursor    *int64 `json:"cursor"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

// changes records the DIDs OnChange was called with.
type changes struct {
	mu   sync.Mutex
	dids []string
}

func (c *changes) add(did string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dids = append(c.dids, did)
}

// take returns the DIDs recorded since the last take.
func (c *changes) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.dids
	c.dids = nil
	return out
}

const (
	didA = "did:plc:ewvi7nxzyoun6zhxrhs64oiz"
	didB = "did:web:labeler.example.com"
)

func serve(t *testing.T, store storage.Store, clock func() time.Time) (*admintest.Server, *changes) {
	ch := &changes{}
	srv := admintest.New(t, store, func(m *adminapi.Mux, w *admintest.World) {
		adminlabelers.Mount(m, labelers.New(labelers.Options{Store: w.Store, Events: w.Events, Now: clock, OnChange: ch.add}))
	}, nil)
	return srv, ch
}

func list(t *testing.T, c *admintest.Caller) []labeler {
	t.Helper()
	r := c.Do(t, "GET", "/admin/labelers", nil)
	admintest.Expect(t, r, 200, "")
	var out []labeler
	r.JSON(t, &out)
	return out
}

// events lists the labeler.* event types newest first, checking each
// entry's subject and actor.
func events(t *testing.T, srv *admintest.Server, actor string) []string {
	t.Helper()
	var out []string
	for _, e := range srv.Events(t, "labeler") {
		if e.ActorDID != actor {
			t.Fatalf("event %s by %q, want %q", e.Type, e.ActorDID, actor)
		}
		out = append(out, e.Type+" "+e.Subject)
	}
	return out
}

func TestLabelerEndpoints(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		var at atomic.Int64
		at.Store(time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC).UnixMicro())
		clock := func() time.Time { return time.UnixMicro(at.Load()).UTC() }
		advance := func(d time.Duration) { at.Add(d.Microseconds()) }
		srv, ch := serve(t, open(t), clock)
		su := srv.Super
		ctx := context.Background()

		r := su.Do(t, "GET", "/admin/labelers", nil)
		admintest.Expect(t, r, 200, "")
		if string(r.Raw) != "[]" {
			t.Fatalf("empty list: %s", r.Raw)
		}

		// POST: 201 with an empty body.
		r = su.Do(t, "POST", "/admin/labelers", map[string]any{"did": didA})
		admintest.Expect(t, r, 201, "")
		if len(r.Raw) != 0 {
			t.Fatalf("POST body: %q", r.Raw)
		}
		advance(time.Second)
		admintest.Expect(t, su.Do(t, "POST", "/admin/labelers", map[string]any{"did": didB}), 201, "")
		got := list(t, su)
		want := []labeler{
			{DID: didA, Status: "active", CreatedAt: "2026-05-06T07:08:09.000Z", UpdatedAt: "2026-05-06T07:08:09.000Z"},
			{DID: didB, Status: "active", CreatedAt: "2026-05-06T07:08:10.000Z", UpdatedAt: "2026-05-06T07:08:10.000Z"},
		}
		if !slices.Equal(got, want) {
			t.Fatalf("list: %+v", got)
		}
		if raw := string(su.Do(t, "GET", "/admin/labelers", nil).Raw); !strings.Contains(raw, `"cursor":null`) {
			t.Fatalf("cursor not null: %s", raw)
		}
		if c := ch.take(); !slices.Equal(c, []string{didA, didB}) {
			t.Fatalf("OnChange after adds: %v", c)
		}

		// The subscription stores labels and moves the cursor.
		if err := srv.Store.ApplyLabels(ctx, storage.LabelBatch{Src: didA, Cursor: 41, Labels: []storage.Label{
			{Src: didA, URI: "at://did:plc:alice/app.test.post/1", Val: "spam", Cts: clock(), Ver: 1},
		}}); err != nil {
			t.Fatal(err)
		}

		// PATCH: pause, then resume; the cursor stays.
		advance(time.Minute)
		r = su.Do(t, "PATCH", "/admin/labelers/"+didA, map[string]any{"status": "paused"})
		admintest.Expect(t, r, 200, "")
		var l labeler
		r.JSON(t, &l)
		if l.Status != "paused" || l.Cursor == nil || *l.Cursor != 41 || l.UpdatedAt != "2026-05-06T07:09:10.000Z" || l.CreatedAt != want[0].CreatedAt {
			t.Fatalf("paused: %s", r.Raw)
		}
		// Pausing a paused one: 200, nothing logged.
		admintest.Expect(t, su.Do(t, "PATCH", "/admin/labelers/"+didA, map[string]any{"status": "paused"}), 200, "")
		r = su.Do(t, "PATCH", "/admin/labelers/"+didA, map[string]any{"status": "active"})
		admintest.Expect(t, r, 200, "")
		r.JSON(t, &l)
		if l.Status != "active" || l.Cursor == nil || *l.Cursor != 41 {
			t.Fatalf("resumed: %s", r.Raw)
		}
		if c := ch.take(); !slices.Equal(c, []string{didA, didA, didA}) {
			t.Fatalf("OnChange after status changes: %v", c)
		}

		// POST of an existing one re-activates it, keeping cursor and labels.
		admintest.Expect(t, su.Do(t, "PATCH", "/admin/labelers/"+didA, map[string]any{"status": "paused"}), 200, "")
		advance(time.Minute)
		r = su.Do(t, "POST", "/admin/labelers", map[string]any{"did": didA})
		admintest.Expect(t, r, 201, "")
		if len(r.Raw) != 0 {
			t.Fatalf("re-activation body: %q", r.Raw)
		}
		got = list(t, su)
		if len(got) != 2 || got[0].DID != didA || got[0].Status != "active" || got[0].Cursor == nil || *got[0].Cursor != 41 ||
			got[0].CreatedAt != want[0].CreatedAt || got[0].UpdatedAt != "2026-05-06T07:10:10.000Z" {
			t.Fatalf("re-activated: %+v", got)
		}
		if labels, _ := srv.Store.LabelsFor(ctx, []string{"at://did:plc:alice/app.test.post/1"}, clock()); len(labels) != 1 {
			t.Fatalf("labels after re-activation: %v", labels)
		}

		// Bad input: 400, nothing stored, nothing logged.
		for _, body := range []any{map[string]any{}, map[string]any{"did": ""}, map[string]any{"did": "alice.example.com"},
			map[string]any{"did": "did:plc"}, map[string]any{"did": 42}, []byte(`{"did":`)} {
			if r := su.Do(t, "POST", "/admin/labelers", body); r.Status != 400 {
				t.Fatalf("POST %v: %d %s", body, r.Status, r.Raw)
			}
		}
		admintest.Expect(t, su.Do(t, "POST", "/admin/labelers", map[string]any{}), 400, "did is required")
		admintest.Expect(t, su.Do(t, "POST", "/admin/labelers", map[string]any{"did": "nope"}), 400, "invalid did")
		for _, status := range []any{"banana", "Active", "", nil, 1} {
			if r := su.Do(t, "PATCH", "/admin/labelers/"+didA, map[string]any{"status": status}); r.Status != 400 {
				t.Fatalf("PATCH status %v: %d %s", status, r.Status, r.Raw)
			}
		}
		admintest.Expect(t, su.Do(t, "PATCH", "/admin/labelers/"+didA, map[string]any{"status": "banana"}), 400, "invalid status: use active or paused")
		admintest.Expect(t, su.Do(t, "PATCH", "/admin/labelers/"+didA, map[string]any{}), 400, "status is required")
		admintest.Expect(t, su.Do(t, "PATCH", "/admin/labelers/not-a-did", map[string]any{"status": "paused"}), 400, "invalid did")
		admintest.Expect(t, su.Do(t, "DELETE", "/admin/labelers/not-a-did", nil), 400, "invalid did")
		if n := len(list(t, su)); n != 2 {
			t.Fatalf("bad input changed the list: %d labelers", n)
		}

		// Unknown DIDs: 404.
		unknown := "did:plc:unknownunknownunknown"
		admintest.Expect(t, su.Do(t, "PATCH", "/admin/labelers/"+unknown, map[string]any{"status": "paused"}), 404, "labeler not found")
		admintest.Expect(t, su.Do(t, "DELETE", "/admin/labelers/"+unknown, nil), 404, "labeler not found")
		if c := ch.take(); !slices.Equal(c, []string{didA, didA}) {
			t.Fatalf("OnChange after refusals: %v, want only the pause and re-activation", c)
		}

		// DELETE: 204, the labeler and its labels are gone.
		r = su.Do(t, "DELETE", "/admin/labelers/"+didA, nil)
		admintest.Expect(t, r, 204, "")
		if got := list(t, su); len(got) != 1 || got[0].DID != didB {
			t.Fatalf("after delete: %+v", got)
		}
		if labels, _ := srv.Store.LabelsFor(ctx, []string{"at://did:plc:alice/app.test.post/1"}, clock()); len(labels) != 0 {
			t.Fatalf("labels after delete: %v", labels)
		}
		admintest.Expect(t, su.Do(t, "DELETE", "/admin/labelers/"+didA, nil), 404, "labeler not found")
		if c := ch.take(); !slices.Equal(c, []string{didA}) {
			t.Fatalf("OnChange after delete: %v", c)
		}

		wantEvents := []string{
			"labeler.deleted " + didA,
			"labeler.reactivated " + didA,
			"labeler.paused " + didA,
			"labeler.resumed " + didA,
			"labeler.paused " + didA,
			"labeler.added " + didB,
			"labeler.added " + didA,
		}
		if got := events(t, srv, su.DID); !slices.Equal(got, wantEvents) {
			t.Fatalf("events:\n got %v\nwant %v", got, wantEvents)
		}
	})
}

// TestLabelerPermissions: each endpoint needs the permission the
// specification names, and no other.
func TestLabelerPermissions(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		srv, _ := serve(t, open(t), time.Now)
		creator := srv.Caller(t, admins.LabelersCreate)
		reader := srv.Caller(t, admins.LabelersRead)
		deleter := srv.Caller(t, admins.LabelersDelete)
		body := map[string]any{"did": didA}
		admintest.Expect(t, reader.Do(t, "POST", "/admin/labelers", body), 403, "insufficient permissions")
		admintest.Expect(t, creator.Do(t, "POST", "/admin/labelers", body), 201, "")
		admintest.Expect(t, creator.Do(t, "GET", "/admin/labelers", nil), 403, "insufficient permissions")
		if got := list(t, reader); len(got) != 1 {
			t.Fatalf("reader's list: %+v", got)
		}
		pause := map[string]any{"status": "paused"}
		admintest.Expect(t, deleter.Do(t, "PATCH", "/admin/labelers/"+didA, pause), 403, "insufficient permissions")
		admintest.Expect(t, creator.Do(t, "PATCH", "/admin/labelers/"+didA, pause), 200, "")
		admintest.Expect(t, creator.Do(t, "DELETE", "/admin/labelers/"+didA, nil), 403, "insufficient permissions")
		admintest.Expect(t, deleter.Do(t, "DELETE", "/admin/labelers/"+didA, nil), 204, "")
	})
}
