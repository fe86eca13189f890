package deadletters_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	dlsvc "github.com/lexview/lexview/appview/internal/service/deadletters"

	"github.com/lexview/lexview/appview/internal/core/scripthost"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/adminapi/deadletters"
	"github.com/lexview/lexview/appview/internal/web/adminapi/internal/admintest"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

func labelLetter(d *storage.DeadLetter) {
	d.Kind, d.Action, d.Record = storage.DeadLetterLabel, "label", nil
}

// outcome posts a single action and returns its 200 answer.
func outcome(t *testing.T, c *admintest.Caller, id, action string) map[string]any {
	t.Helper()
	r := c.Do(t, "POST", "/admin/dead-letters/"+id+"/"+action, nil)
	admintest.Expect(t, r, 200, "")
	return r.Object(t)
}

func TestSingleActions(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		srv := admintest.New(t, open(t), mountDeadLetters, nil)
		rt := srv.World.Runtime
		su := srv.Super
		var d [6]storage.DeadLetter
		for i := range d {
			d[i] = add(t, srv.Store, "app.test.post", i, nil)
		}
		label := add(t, srv.Store, "app.test.post", 9, labelLetter)

		// Dismiss resolves without running anything, for labels too.
		if o := outcome(t, su, d[0].ID, "dismiss"); o["ok"] != true || o["resolved"] != true || o["error"] != nil {
			t.Fatalf("dismiss: %v", o)
		}
		outcome(t, su, label.ID, "dismiss")
		if _, retried, reindexed := rt.Counts(); retried+reindexed != 0 {
			t.Fatal("dismiss ran the runtime")
		}
		if got := get(t, su, d[0].ID); got.ResolvedAt == nil || got.Attempts != 3 {
			t.Fatalf("dismissed: %+v", got)
		}

		// Retry: success resolves, failure records error and attempts.
		outcome(t, su, d[1].ID, "retry")
		rt.SetFail(d[2].ID, errors.New("attempt to index a nil value"))
		o := outcome(t, su, d[2].ID, "retry")
		if o["ok"] != true || o["resolved"] != false || o["error"] != "attempt to index a nil value" {
			t.Fatalf("failed retry: %v", o)
		}
		if got := get(t, su, d[2].ID); got.ResolvedAt != nil || got.Attempts != 4 || got.Error != "attempt to index a nil value" {
			t.Fatalf("after failed retry: %+v", got)
		}
		outcome(t, su, d[2].ID, "retry")
		if got := get(t, su, d[2].ID); got.Attempts != 5 {
			t.Fatalf("attempts grow: %+v", got)
		}
		rt.SetFail(d[2].ID, nil)
		if o := outcome(t, su, d[2].ID, "retry"); o["resolved"] != true {
			t.Fatalf("retry after fix: %v", o)
		}

		// Reindex: the same bookkeeping; a PDS failure is a failure too.
		rt.SetFail(d[3].ID, errors.New("fetching the record from the PDS: 502 Bad Gateway"))
		if o := outcome(t, su, d[3].ID, "reindex"); o["resolved"] != false || !strings.Contains(o["error"].(string), "502") {
			t.Fatalf("failed reindex: %v", o)
		}
		rt.SetFail(d[3].ID, nil)
		if o := outcome(t, su, d[3].ID, "reindex"); o["resolved"] != true {
			t.Fatalf("reindex: %v", o)
		}

		// No script bound.
		rt.SetFail(d[4].ID, fmt.Errorf("record.create:app.test.post: %w", scripthost.ErrNoScript))
		admintest.Expect(t, su.Do(t, "POST", "/admin/dead-letters/"+d[4].ID+"/retry", nil), 404, "no script is bound to this dead letter")
		if got := get(t, su, d[4].ID); got.ResolvedAt != nil || got.Attempts != 3 {
			t.Fatalf("no-script retry changed the dead letter: %+v", got)
		}

		// Refusals.
		label2 := add(t, srv.Store, "app.test.post", 10, labelLetter)
		admintest.Expect(t, su.Do(t, "POST", "/admin/dead-letters/"+label2.ID+"/retry", nil), 400, "label-arrival dead letters cannot be retried")
		admintest.Expect(t, su.Do(t, "POST", "/admin/dead-letters/"+label2.ID+"/reindex", nil), 400, "label-arrival dead letters cannot be reindexed")
		for _, action := range []string{"dismiss", "retry", "reindex"} {
			admintest.Expect(t, su.Do(t, "POST", "/admin/dead-letters/nope/"+action, nil), 404, "dead letter not found")
			admintest.Expect(t, su.Do(t, "POST", "/admin/dead-letters/"+d[1].ID+"/"+action, nil), 404, "dead letter not found")
		}

		_, retried, reindexed := rt.Counts()
		if retried != 5 || reindexed != 2 {
			t.Fatalf("runtime calls: %d retries, %d reindexes", retried, reindexed)
		}
		events := srv.Events(t, "dead_letter")
		var types []string
		for _, e := range events {
			types = append(types, e.Type)
		}
		want := []string{"dead_letter.reindexed", "dead_letter.reindexed", "dead_letter.retried", "dead_letter.retried",
			"dead_letter.retried", "dead_letter.retried", "dead_letter.dismissed", "dead_letter.dismissed"}
		if !slices.Equal(types, want) {
			t.Fatalf("events: %v", types)
		}
		if detail := decode(t, events[1].Detail); events[1].Subject != d[3].ID || detail["resolved"] != false ||
			detail["uri"] != d[3].URI || detail["error"] == "" {
			t.Fatalf("event: %+v", events[1])
		}
	})
}

func TestActionsWithoutRuntime(t *testing.T) {
	srv := admintest.New(t, storagetest.SQLite(t), mountDeadLetters, func(w *admintest.World) { w.Runtime = nil })
	d := add(t, srv.Store, "app.test.post", 0, nil)
	admintest.Expect(t, srv.Super.Do(t, "POST", "/admin/dead-letters/"+d.ID+"/retry", nil), 404, "no script is bound to this dead letter")
	admintest.Expect(t, srv.Super.Do(t, "POST", "/admin/dead-letters/"+d.ID+"/reindex", nil), 503, "reindexing is not available on this instance")
	outcome(t, srv.Super, d.ID, "dismiss")
}

// bulk posts a bulk action and returns processed, resolved, failed.
func bulk(t *testing.T, c *admintest.Caller, action string, body any) [3]int {
	t.Helper()
	r := c.Do(t, "POST", "/admin/dead-letters/bulk/"+action, body)
	admintest.Expect(t, r, 200, "")
	o := r.Object(t)
	if o["ok"] != true {
		t.Fatalf("bulk answer: %s", r.Raw)
	}
	n := func(k string) int { f, _ := o[k].(float64); return int(f) }
	return [3]int{n("processed"), n("resolved"), n("failed")}
}

func TestBulk(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		srv := admintest.New(t, open(t), mountDeadLetters, nil)
		rt := srv.World.Runtime
		su := srv.Super
		ctx := context.Background()

		// ids: per-item refusals and failures do not stop the batch;
		// duplicates count once.
		a := add(t, srv.Store, "app.test.post", 0, nil)
		b := add(t, srv.Store, "app.test.post", 1, nil)
		c := add(t, srv.Store, "app.test.post", 2, labelLetter)
		done := add(t, srv.Store, "app.test.post", 3, nil)
		resolve(t, srv.Store, done.ID)
		rt.SetFail(b.ID, errors.New("still broken"))
		got := bulk(t, su, "retry", map[string]any{"ids": []string{"nope", a.ID, b.ID, c.ID, done.ID, a.ID}})
		if got != [3]int{5, 1, 4} {
			t.Fatalf("bulk retry by ids: %v", got)
		}
		if g := get(t, su, b.ID); g.Attempts != 4 || g.Error != "still broken" {
			t.Fatalf("failed item: %+v", g)
		}
		if got := bulk(t, su, "dismiss", map[string]any{"ids": []string{b.ID, c.ID}}); got != [3]int{2, 2, 0} {
			t.Fatalf("bulk dismiss by ids: %v", got)
		}

		// all: every unresolved one, across more than one walk page, each
		// exactly once even when it fails again; collection limits it.
		const n = 230
		var posts []string
		for i := range n {
			d := add(t, srv.Store, "app.test.post", 100+i, nil)
			posts = append(posts, d.ID)
			if i%3 == 0 {
				rt.SetFail(d.ID, errors.New("nope"))
			}
		}
		like := add(t, srv.Store, "app.test.like", 50, nil)
		_, before, _ := rt.Counts()
		got = bulk(t, su, "retry", map[string]any{"all": true, "collection": "app.test.post"})
		failing := (n + 2) / 3
		if got != [3]int{n, n - failing, failing} {
			t.Fatalf("bulk retry all: %v", got)
		}
		rt2 := rt.Retried[before:]
		if !slices.Equal(sorted(rt2), sorted(posts)) {
			t.Fatalf("retried %d dead letters, %d distinct, want %d", len(rt2), len(uniq(rt2)), n)
		}
		if left, err := srv.Store.CountDeadLetters(ctx, storage.DeadLetterQuery{Resolved: ptr(false)}); err != nil || left != int64(failing+1) {
			t.Fatalf("unresolved left: %d %v", left, err)
		}
		got = bulk(t, su, "reindex", map[string]any{"all": true})
		if got != [3]int{failing + 1, 1, failing} {
			t.Fatalf("bulk reindex all: %v", got)
		}
		if g := get(t, su, like.ID); g.ResolvedAt == nil {
			t.Fatalf("like not reindexed: %+v", g)
		}
		if got := bulk(t, su, "dismiss", map[string]any{"all": true}); got != [3]int{failing, failing, 0} {
			t.Fatalf("bulk dismiss all: %v", got)
		}
		if got := bulk(t, su, "dismiss", map[string]any{"all": true}); got != [3]int{0, 0, 0} {
			t.Fatalf("nothing left: %v", got)
		}

		// One audit entry per bulk call, none per item.
		events := srv.Events(t, "dead_letter")
		var types []string
		for _, e := range events {
			types = append(types, e.Type)
		}
		want := []string{"dead_letter.bulk_dismissed", "dead_letter.bulk_dismissed", "dead_letter.bulk_reindexed",
			"dead_letter.bulk_retried", "dead_letter.bulk_dismissed", "dead_letter.bulk_retried"}
		if !slices.Equal(types, want) {
			t.Fatalf("events: %v", types)
		}
		if detail := decode(t, events[3].Detail); events[3].Subject != "app.test.post" || detail["processed"] != float64(n) ||
			detail["failed"] != float64(failing) || detail["all"] != true {
			t.Fatalf("bulk event: %+v", events[3])
		}
	})
}

func decode(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func ptr[T any](v T) *T { return &v }

func TestBulkBadInput(t *testing.T) {
	srv := admintest.New(t, storagetest.SQLite(t), mountDeadLetters, nil)
	many := make([]string, dlsvc.MaxBulkIDs+1)
	for i := range many {
		many[i] = fmt.Sprint(i)
	}
	cases := []struct {
		body any
		msg  string
	}{
		{map[string]any{}, "ids or all is required"},
		{map[string]any{"ids": []string{}}, "ids or all is required"},
		{map[string]any{"all": false}, "ids or all is required"},
		{map[string]any{"all": false, "collection": "app.test.post"}, "ids or all is required"},
		{map[string]any{"ids": []string{"x"}, "all": true}, "ids and all cannot be combined"},
		{map[string]any{"ids": many}, "ids must hold at most 1000 dead letter ids"},
		{map[string]any{"ids": []string{"x"}, "collection": "app.test.post"}, "collection applies only with all"},
		{map[string]any{"all": true, "collection": "nope"}, "collection must be a valid NSID"},
		{[]byte(`{"all": "yes"}`), "invalid request body"},
		{[]byte(`not json`), "invalid request body"},
	}
	for _, action := range []string{"dismiss", "retry", "reindex"} {
		for _, c := range cases {
			admintest.Expect(t, srv.Super.Do(t, "POST", "/admin/dead-letters/bulk/"+action, c.body), 400, c.msg)
		}
	}
	if got := bulk(t, srv.Super, "dismiss", map[string]any{"ids": many[:dlsvc.MaxBulkIDs]}); got != [3]int{1000, 0, 1000} {
		t.Fatalf("1000 unknown ids: %v", got)
	}
}

func mountDeadLetters(m *adminapi.Mux, w *admintest.World) { deadletters.Mount(m, w.DeadLetters()) }
