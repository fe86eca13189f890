package backfilljobs_test

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/internal/backfilltest"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

func TestCreateAndInspect(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		w := setup(t, open(t), "")
		alice, bob := w.account(t, 3), w.account(t, 2)
		w.dir.setHandle("alice.test", syntax.DID(alice))

		// Handles and DIDs; duplicates (also a handle and its DID) count once.
		id := w.create(t, map[string]any{
			"collection": postNSID, "dids": []string{"alice.test", bob, bob, "@Alice.Test"}, "did": alice,
		})
		done := w.wait(t, id, "completed")
		if done.Scope != "dids" || done.DID != nil || *done.Collection != postNSID || done.Stage != "completed" ||
			n(done.TotalRepos) != 2 || n(done.ResolvedRepos) != 2 || n(done.ProcessedRepos) != 2 || n(done.TotalRecords) != 5 ||
			done.Error != nil || done.StartedAt == nil || done.CompletedAt == nil || done.CreatedAt == "" {
			t.Fatalf("job: %+v", done)
		}
		r := w.su.Do(t, "GET", "/admin/backfill/status", nil)
		var raw []map[string]any
		r.JSON(t, &raw)
		keys := make([]string, 0, len(raw[0]))
		for k := range raw[0] {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		want := []string{"collection", "completed_at", "created_at", "did", "error", "eta_seconds", "failed_repos", "failures", "id",
			"processed_repos", "resolved_repos", "scope", "stage", "started_at", "status", "total_records", "total_repos"}
		if !slices.Equal(keys, want) {
			t.Fatalf("job fields: %v", keys)
		}
		if n, _ := w.env.Store.CountRecords(t.Context(), postNSID); n != 5 {
			t.Fatalf("%d records indexed", n)
		}

		// One account: did is set. Newest first.
		single := w.create(t, map[string]any{"did": bob})
		w.wait(t, single, "completed")
		jobs := w.jobs(t)
		if len(jobs) != 2 || jobs[0].ID != single || jobs[0].DID == nil || *jobs[0].DID != bob || jobs[0].Collection != nil {
			t.Fatalf("jobs: %+v", jobs)
		}

		// Repositories: phases, DID keyset paging.
		page := func(query string) (int, []map[string]any, *string) {
			t.Helper()
			r := w.su.Do(t, "GET", "/admin/backfill/"+id+"/repos?"+query, nil)
			var body struct {
				Repos  []map[string]any `json:"repos"`
				Cursor *string          `json:"cursor"`
			}
			if r.Status == 200 {
				r.JSON(t, &body)
			}
			return r.Status, body.Repos, body.Cursor
		}
		status, repos, cursor := page("limit=1")
		if status != 200 || len(repos) != 1 || cursor == nil {
			t.Fatalf("first page: %d %v %v", status, repos, cursor)
		}
		first := repos[0]["did"].(string)
		status, repos, cursor = page("limit=1&cursor=" + url.QueryEscape(*cursor))
		if status != 200 || len(repos) != 1 || cursor != nil || repos[0]["did"] == first {
			t.Fatalf("second page: %d %v %v", status, repos, cursor)
		}
		if repos[0]["status"] != "fetched" || repos[0]["pds_endpoint"] != w.pds.URL() || len(repos[0]) != 7 ||
			repos[0]["error"] != nil || repos[0]["failure_reason"] != nil ||
			repos[0]["fetch_method"] != "list_records" {
			t.Fatalf("repo row: %v", repos[0])
		}
		for _, phase := range []string{"discovered", "resolved", "fetched"} {
			if status, repos, cursor := page("phase=" + phase); status != 200 || len(repos) != 2 || cursor != nil {
				t.Fatalf("phase %s: %d %v", phase, status, repos)
			}
		}
		for _, bad := range []string{"phase=done", "limit=0", "limit=101", "cursor=bogus", "phase=fetched&cursor=" + url.QueryEscape(*firstCursor(t, w, id))} {
			if status, _, _ := page(bad); status != 400 {
				t.Fatalf("%s: %d", bad, status)
			}
		}

		r = w.su.Do(t, "GET", "/admin/backfill/"+id+"/pds-summary", nil)
		if r.Status != 200 || string(r.Raw) != fmt.Sprintf(`{"pds_endpoints":[{"pds_endpoint":%q,"total_repos":2,"completed_repos":2,"total_records":5}]}`, w.pds.URL()) {
			t.Fatalf("pds summary: %d %s", r.Status, r.Raw)
		}

		// Details.
		if r := w.su.Do(t, "DELETE", "/admin/backfill/"+id+"/details", nil); r.Status != 204 {
			t.Fatalf("delete details: %d %s", r.Status, r.Raw)
		}
		if _, repos, _ := page(""); len(repos) != 0 {
			t.Fatalf("rows left: %v", repos)
		}
		if r := w.su.Do(t, "DELETE", "/admin/backfill/details", nil); r.Status != 204 {
			t.Fatalf("delete all details: %d %s", r.Status, r.Raw)
		}
		if rows, _ := w.env.Store.ListBackfillRepos(t.Context(), single, storage.BackfillRepoFilter{Limit: 10}); len(rows) != 0 {
			t.Fatalf("finished job rows left: %v", rows)
		}

		// Unknown jobs.
		unknown := storage.NewID()
		for _, route := range []string{"POST /cancel", "POST /pause", "POST /resume", "GET /repos", "GET /pds-summary",
			"DELETE /details", "GET /events"} {
			method, suffix, _ := strings.Cut(route, " ")
			if r := w.su.Do(t, method, "/admin/backfill/"+unknown+suffix, nil); r.Status != 404 || r.Error(t) != "backfill job not found" {
				t.Fatalf("%s unknown job: %d %s", route, r.Status, r.Raw)
			}
		}
	})
}

// firstCursor is a valid cursor of the discovered phase of job id.
func firstCursor(t *testing.T, w *world, id string) *string {
	t.Helper()
	var body struct {
		Cursor *string `json:"cursor"`
	}
	w.su.Do(t, "GET", "/admin/backfill/"+id+"/repos?limit=1", nil).JSON(t, &body)
	return body.Cursor
}

func TestCreateRefusals(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		w := setup(t, open(t), "")
		alice := w.account(t, 1)
		refuse := func(body any, want string) {
			t.Helper()
			r := w.su.Do(t, "POST", "/admin/backfill", body)
			if r.Status != 400 || !strings.Contains(r.Error(t), want) {
				t.Fatalf("%v: %d %s", body, r.Status, r.Raw)
			}
		}
		refuse(map[string]any{"dids": []string{"bob.test", alice, "did:plc:nope", "bob.test"}},
			"unresolvable accounts: bob.test, did:plc:nope")
		refuse(map[string]any{"did": "not a handle"}, "unresolvable accounts: not a handle")
		many := make([]string, 501)
		for i := range many {
			many[i] = fmt.Sprintf("did:plc:many%04d", i)
		}
		refuse(map[string]any{"dids": many}, "at most 500")
		refuse(map[string]any{"collection": "not-an-nsid"}, "invalid collection")
		refuse([]byte(`{"dids": "alice"}`), "invalid request body")
		if jobs := w.jobs(t); len(jobs) != 0 {
			t.Fatalf("refused requests created %d jobs", len(jobs))
		}
		// 500 distinct accounts are within the limit (here, none resolve).
		refuse(map[string]any{"dids": many[:500]}, "unresolvable accounts: did:plc:many0000, ")

		// Permissions: backfill:read may look but not act.
		viewer := w.env.AddAdmin(t, admins.BackfillRead)
		if r := viewer.Do(t, "POST", "/admin/backfill", map[string]any{"did": alice}); r.Status != 403 {
			t.Fatalf("read-only create: %d", r.Status)
		}
		if r := viewer.Do(t, "GET", "/admin/backfill/status", nil); r.Status != 200 {
			t.Fatalf("read-only status: %d", r.Status)
		}
	})
}

// Every transition of the specification's table, over HTTP.
func TestStateTransitions(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		w := setup(t, open(t), "")
		w.slow(t)
		var dids []string
		for range 12 {
			dids = append(dids, w.account(t, 1))
		}
		id := w.create(t, map[string]any{"collection": postNSID, "dids": dids})
		act := func(action string, status int, want string) {
			t.Helper()
			r := w.su.Do(t, "POST", "/admin/backfill/"+id+"/"+action, nil)
			if r.Status != status {
				t.Fatalf("%s: %d %s", action, r.Status, r.Raw)
			}
			if status == 200 && string(r.Raw) != fmt.Sprintf(`{"id":%q,"status":%q}`, id, want) {
				t.Fatalf("%s answer: %s", action, r.Raw)
			}
			if status == 400 && !strings.Contains(r.Error(t), "not "+want) {
				t.Fatalf("%s error: %s", action, r.Raw)
			}
		}
		act("resume", 400, "paused")
		act("pause", 200, "pausing")
		act("pause", 400, "running")
		act("cancel", 400, "running")
		paused := w.wait(t, id, "paused")
		if slices.Contains([]string{"completed", "failed", "cancelled"}, paused.Stage) || n(paused.ProcessedRepos) >= 12 {
			t.Fatalf("paused job: %+v", paused)
		}
		act("pause", 400, "running")
		act("resume", 200, "running")
		act("resume", 400, "paused")
		act("cancel", 200, "cancelling")
		cancelled := w.wait(t, id, "cancelled")
		if cancelled.Stage != "cancelled" || cancelled.CompletedAt == nil {
			t.Fatalf("cancelled job: %+v", cancelled)
		}
		act("cancel", 400, "running")
		act("resume", 400, "paused")

		events, _, err := w.env.Store.ListEvents(t.Context(), storage.EventFilter{Category: "backfill", Subject: id, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, e := range events {
			types = append(types, e.Type)
			if e.ActorDID != w.su.Account.DID.String() {
				t.Errorf("%s: actor %q", e.Type, e.ActorDID)
			}
		}
		if !slices.Equal(types, []string{"backfill.cancelled", "backfill.resumed", "backfill.paused", "backfill.created"}) {
			t.Fatalf("audit: %v", types)
		}
	})
}

// Uploading a record lexicon with backfill true (the default on an
// instance that follows a live stream) starts a network backfill of its
// collection, and says so: the answer names the job and warns of the
// whole-network crawl, and so does the event log. Here RELAY_URL is a
// single PDS (listRepos).
func TestLexiconUploadStartsBackfill(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		w := setupWith(t, open(t), "", appview.Config{Ingest: appview.IngestConfig{EventSource: quietSource{}}})
		w.account(t, 4)
		w.account(t, 3)
		const likeDoc = `{"lexicon":1,"id":"app.test.like","defs":{"main":{"type":"record","key":"tid","record":{"type":"object","properties":{"text":{"type":"string"}}}}}}`
		r := w.su.Do(t, "POST", "/admin/lexicons", map[string]any{"lexicon_json": rawJSON(likeDoc), "backfill": false})
		if r.Status != 201 || len(r.Object(t)) != 2 {
			t.Fatalf("upload without backfill: %d %s", r.Status, r.Raw)
		}
		if r := w.su.Do(t, "POST", "/admin/lexicons", map[string]any{"lexicon_json": rawJSON(`{"lexicon":1,"id":"app.test.list","defs":{"main":{"type":"query"}}}`)}); r.Status != 201 || len(r.Object(t)) != 2 {
			t.Fatalf("upload: %d %s", r.Status, r.Raw)
		}
		if jobs := w.jobs(t); len(jobs) != 0 {
			t.Fatalf("jobs without backfill: %+v", jobs)
		}
		r = w.su.Do(t, "POST", "/admin/lexicons", map[string]any{"lexicon_json": rawJSON(recordLexicon(postNSID))})
		if r.Status != 200 {
			t.Fatalf("upload: %d %s", r.Status, r.Raw)
		}
		jobs := w.jobs(t)
		if len(jobs) != 1 || jobs[0].Scope != "network" || jobs[0].Collection == nil || *jobs[0].Collection != postNSID {
			t.Fatalf("jobs: %+v", jobs)
		}
		var answer struct {
			BackfillJob *struct {
				ID, Scope, Status string
				Created           bool
			} `json:"backfill_job"`
			Warnings []string `json:"warnings"`
		}
		r.JSON(t, &answer)
		if j := answer.BackfillJob; j == nil || j.ID != jobs[0].ID || j.Scope != "network" || j.Status != "running" || !j.Created {
			t.Fatalf("answer: %s", r.Raw)
		}
		if len(answer.Warnings) != 1 || !strings.Contains(answer.Warnings[0], "crawls the whole network") ||
			!strings.Contains(answer.Warnings[0], w.pds.URL()) || !strings.Contains(answer.Warnings[0], "/admin/backfill/"+jobs[0].ID+"/cancel") {
			t.Fatalf("warnings: %q", answer.Warnings)
		}
		done := w.wait(t, jobs[0].ID, "completed")
		if n(done.TotalRepos) != 2 || n(done.TotalRecords) != 7 {
			t.Fatalf("job: %+v", done)
		}
		events, _, _ := w.env.Store.ListEvents(t.Context(), storage.EventFilter{Type: "backfill.created", Limit: 5})
		if len(events) != 1 || events[0].ActorDID != w.su.Account.DID.String() {
			t.Fatalf("audit: %+v", events)
		}
		events, _, _ = w.env.Store.ListEvents(t.Context(), storage.EventFilter{Type: "backfill.network_crawl", Limit: 5})
		if len(events) != 1 || events[0].Severity != "warn" || events[0].Subject != jobs[0].ID ||
			events[0].ActorDID != w.su.Account.DID.String() || !strings.Contains(string(events[0].Detail), w.pds.URL()) {
			t.Fatalf("network crawl event: %+v", events)
		}
	})
}

// An instance that follows no live stream (JETSTREAM_URL=off) does not
// start crawling the network when a record lexicon is uploaded without
// saying backfill: the relay is not contacted, the lexicon is stored with
// backfill false, and the answer says why. An explicit backfill true still
// starts the job.
func TestLexiconUploadOffline(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		relay := backfilltest.NewRelay(t)
		w := setup(t, open(t), relay.URL())
		relay.Add(postNSID, w.account(t, 2))
		r := w.su.Do(t, "POST", "/admin/lexicons", map[string]any{"lexicon_json": rawJSON(recordLexicon(postNSID))})
		if r.Status != 200 {
			t.Fatalf("upload: %d %s", r.Status, r.Raw)
		}
		var answer map[string]any
		r.JSON(t, &answer)
		warnings, _ := answer["warnings"].([]any)
		if answer["backfill_job"] != nil || len(warnings) != 1 || !strings.Contains(warnings[0].(string), "backfill defaults to false") {
			t.Fatalf("answer: %s", r.Raw)
		}
		if jobs := w.jobs(t); len(jobs) != 0 {
			t.Fatalf("jobs: %+v", jobs)
		}
		var list []map[string]any
		w.su.Do(t, "GET", "/admin/lexicons", nil).JSON(t, &list)
		if len(list) != 1 || list[0]["backfill"] != false {
			t.Fatalf("lexicons: %v", list)
		}
		// The walkthrough's upload: backfill false, said explicitly.
		r = w.su.Do(t, "POST", "/admin/lexicons", map[string]any{"lexicon_json": rawJSON(recordLexicon(postNSID)), "backfill": false})
		if r.Status != 200 || len(r.Object(t)) != 2 {
			t.Fatalf("upload with backfill false: %d %s", r.Status, r.Raw)
		}
		if calls, _ := relay.Calls(); calls != 0 {
			t.Fatalf("the relay was contacted %d times", calls)
		}

		r = w.su.Do(t, "POST", "/admin/lexicons", map[string]any{"lexicon_json": rawJSON(recordLexicon(postNSID)), "backfill": true})
		r.JSON(t, &answer)
		job, _ := answer["backfill_job"].(map[string]any)
		if r.Status != 200 || job == nil || job["created"] != true {
			t.Fatalf("upload with backfill true: %d %s", r.Status, r.Raw)
		}
		if done := w.wait(t, job["id"].(string), "completed"); n(done.TotalRecords) != 2 {
			t.Fatalf("job: %+v", done)
		}
		if calls, _ := relay.Calls(); calls == 0 {
			t.Fatal("the explicit backfill did not use the relay")
		}
	})
}

type rawJSON string

func (r rawJSON) MarshalJSON() ([]byte, error) { return []byte(r), nil }
