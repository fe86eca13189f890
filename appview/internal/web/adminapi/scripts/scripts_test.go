package scripts_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	scriptsvc "github.com/lexview/lexview/appview/internal/service/scripts"

	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/adminapi/internal/admintest"
	"github.com/lexview/lexview/appview/internal/web/adminapi/scripts"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

const (
	source  = "function handle() return {ok = true} end"
	source2 = "function handle() return {ok = false} end"
)

type summary struct {
	ID          string  `json:"id"`
	Trigger     string  `json:"trigger"`
	Description string  `json:"description"`
	Revision    int     `json:"revision"`
	CreatedAt   string  `json:"created_at"`
	UpdatedAt   string  `json:"updated_at"`
	Source      *string `json:"source"`
}

func listScripts(t *testing.T, c *admintest.Caller, query string) []summary {
	t.Helper()
	r := c.Do(t, "GET", "/admin/scripts"+query, nil)
	admintest.Expect(t, r, 200, "")
	var body struct {
		Scripts []summary `json:"scripts"`
	}
	r.JSON(t, &body)
	if body.Scripts == nil {
		t.Fatalf("scripts is not an array: %s", r.Raw)
	}
	return body.Scripts
}

func triggers(list []summary) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s.Trigger
	}
	return out
}

func TestScriptCRUD(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		srv := admintest.New(t, open(t), mountScripts, nil)
		rt := srv.World.Runtime
		su := srv.Super

		r := su.Do(t, "POST", "/admin/scripts", map[string]any{
			"trigger": "xrpc.query:app.test.listPosts", "source": source, "description": "lists posts",
		})
		admintest.Expect(t, r, 201, "")
		created := r.Object(t)
		id, _ := created["id"].(string)
		if id == "" || created["trigger"] != "xrpc.query:app.test.listPosts" || created["revision"] != float64(1) || len(created) != 3 {
			t.Fatalf("create: %s", r.Raw)
		}
		// The same trigger replaces the script: 200, a new revision, the
		// same id.
		r = su.Do(t, "POST", "/admin/scripts", map[string]any{"trigger": "xrpc.query:app.test.listPosts", "source": source2})
		admintest.Expect(t, r, 200, "")
		if o := r.Object(t); o["id"] != id || o["revision"] != float64(2) {
			t.Fatalf("replace: %s", r.Raw)
		}
		for _, trig := range []string{"record.create:app.test.post", "record.index:app.test.post", "xrpc.procedure:app.test.write"} {
			admintest.Expect(t, su.Do(t, "POST", "/admin/scripts", map[string]any{"trigger": trig, "source": source}), 201, "")
		}

		all := listScripts(t, su, "")
		want := []string{"record.create:app.test.post", "record.index:app.test.post", "xrpc.procedure:app.test.write", "xrpc.query:app.test.listPosts"}
		if !slices.Equal(triggers(all), want) {
			t.Fatalf("list: %v", triggers(all))
		}
		for _, s := range all {
			if s.Source != nil || s.CreatedAt == "" || s.UpdatedAt == "" || s.Revision < 1 {
				t.Fatalf("list item: %+v", s)
			}
		}
		if got := triggers(listScripts(t, su, "?suffix=app.test.post")); !slices.Equal(got, want[:2]) {
			t.Fatalf("suffix filter: %v", got)
		}
		if got := listScripts(t, su, "?suffix=nothing"); len(got) != 0 {
			t.Fatalf("suffix without match: %v", got)
		}

		r = su.Do(t, "GET", "/admin/scripts/"+id, nil)
		admintest.Expect(t, r, 200, "")
		var one summary
		r.JSON(t, &one)
		if one.Source == nil || *one.Source != source2 || one.Description != "" || one.Revision != 2 || one.ID != id {
			t.Fatalf("get: %s", r.Raw)
		}

		// PATCH: a description alone keeps the revision, a source grows it.
		r = su.Do(t, "PATCH", "/admin/scripts/"+id, map[string]any{"description": "new words"})
		admintest.Expect(t, r, 200, "")
		if o := r.Object(t); o["revision"] != float64(2) || o["trigger"] != "xrpc.query:app.test.listPosts" {
			t.Fatalf("patch description: %s", r.Raw)
		}
		admintest.Expect(t, su.Do(t, "PATCH", "/admin/scripts/"+id, map[string]any{"source": source}), 200, "")
		su.Do(t, "GET", "/admin/scripts/"+id, nil).JSON(t, &one)
		if *one.Source != source || one.Description != "new words" || one.Revision != 3 {
			t.Fatalf("after patches: %+v", one)
		}
		admintest.Expect(t, su.Do(t, "PATCH", "/admin/scripts/nope", map[string]any{"source": source}), 404, "script not found")

		admintest.Expect(t, su.Do(t, "DELETE", "/admin/scripts/"+id, nil), 204, "")
		admintest.Expect(t, su.Do(t, "DELETE", "/admin/scripts/"+id, nil), 404, "script not found")
		admintest.Expect(t, su.Do(t, "GET", "/admin/scripts/"+id, nil), 404, "script not found")
		if len(listScripts(t, su, "")) != 3 {
			t.Fatal("deleted script still listed")
		}

		// Every change reloads the runtime: 5 creates or replaces, 2
		// patches, 1 delete.
		if reloads, _, _ := rt.Counts(); reloads != 8 {
			t.Fatalf("reloads: %d", reloads)
		}

		events := srv.Events(t, "script")
		var types []string
		for _, e := range events {
			types = append(types, e.Type)
			if strings.Contains(string(e.Detail), "handle") || e.ActorDID != su.DID {
				t.Fatalf("event %s: actor %s detail %s", e.Type, e.ActorDID, e.Detail)
			}
		}
		wantTypes := []string{"script.deleted", "script.updated", "script.updated", "script.created", "script.created",
			"script.created", "script.updated", "script.created"}
		if !slices.Equal(types, wantTypes) {
			t.Fatalf("events: %v", types)
		}
		var d struct {
			ID       string `json:"id"`
			Revision int    `json:"revision"`
		}
		if err := json.Unmarshal(events[1].Detail, &d); err != nil {
			t.Fatal(err)
		}
		if events[0].Subject != "xrpc.query:app.test.listPosts" || d.Revision != 3 || d.ID != id {
			t.Fatalf("event subject/detail: %s %s", events[0].Subject, events[1].Detail)
		}
	})
}

func TestScriptBadInput(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		srv := admintest.New(t, open(t), mountScripts, nil)
		srv.World.Runtime.SyntaxError = "unexpected symbol near 'end'"
		su := srv.Super
		const trig = "record.update:app.test.post"
		cases := []struct {
			name string
			body any
			msg  string
		}{
			{"malformed", []byte(`{"trigger": `), "invalid request body"},
			{"no trigger", map[string]any{"source": source}, "trigger is required"},
			{"no kind", map[string]any{"trigger": "app.test.post", "source": source}, ""},
			{"unknown kind", map[string]any{"trigger": "record.upsert:app.test.post", "source": source}, ""},
			{"bad nsid", map[string]any{"trigger": "record.update:nope", "source": source}, "trigger has an invalid NSID"},
			{"empty nsid", map[string]any{"trigger": "xrpc.query:", "source": source}, "trigger has an invalid NSID"},
			{"bad label value", map[string]any{"trigger": "label.arrive:no spaces", "source": source}, "trigger has an invalid label value"},
			{"empty label value", map[string]any{"trigger": "label.arrive:", "source": source}, "trigger has an invalid label value"},
			{"long label value", map[string]any{"trigger": "label.arrive:" + strings.Repeat("a", 129), "source": source}, "trigger has an invalid label value"},
			{"no source", map[string]any{"trigger": trig}, "source is required"},
			{"empty source", map[string]any{"trigger": trig, "source": "  \n"}, "source must not be empty"},
			{"large source", map[string]any{"trigger": trig, "source": "--" + strings.Repeat("x", scriptsvc.MaxSourceSize)},
				"source must be at most 262144 bytes"},
			{"syntax error", map[string]any{"trigger": trig, "source": "function handle() unexpected symbol near 'end'"},
				"script has a syntax error: unexpected symbol near 'end'"},
		}
		for _, c := range cases {
			r := su.Do(t, "POST", "/admin/scripts", c.body)
			if r.Status != 400 || r.Error(t) == "" || (c.msg != "" && r.Error(t) != c.msg) {
				t.Errorf("%s: %d %s", c.name, r.Status, r.Raw)
			}
		}
		// Exactly the maximum is accepted.
		exact := "--" + strings.Repeat("x", scriptsvc.MaxSourceSize-2)
		admintest.Expect(t, su.Do(t, "POST", "/admin/scripts", map[string]any{"trigger": trig, "source": exact}), 201, "")
		id := listScripts(t, su, "")[0].ID

		for name, body := range map[string]any{
			"nothing":      map[string]any{},
			"null source":  map[string]any{"source": nil},
			"empty source": map[string]any{"source": ""},
			"syntax error": map[string]any{"source": "unexpected symbol near 'end'"},
		} {
			if r := su.Do(t, "PATCH", "/admin/scripts/"+id, body); r.Status != 400 {
				t.Errorf("patch %s: %d %s", name, r.Status, r.Raw)
			}
		}
		if len(srv.Events(t, "script")) != 1 {
			t.Fatal("a refused change was audited")
		}
	})
}

func TestScriptsWithoutRuntime(t *testing.T) {
	srv := admintest.New(t, storagetest.SQLite(t), mountScripts, func(w *admintest.World) { w.Runtime = nil })
	// No syntax check and no reload: the script is stored as given.
	r := srv.Super.Do(t, "POST", "/admin/scripts", map[string]any{"trigger": "record.delete:app.test.post", "source": "not lua ("})
	admintest.Expect(t, r, 201, "")
	admintest.Expect(t, srv.Super.Do(t, "DELETE", "/admin/scripts/"+r.Object(t)["id"].(string), nil), 204, "")
}

func TestScriptReloadFailure(t *testing.T) {
	rt := &admintest.Runtime{ReloadErr: errors.New("boom")}
	srv := admintest.New(t, storagetest.SQLite(t), mountScripts, func(w *admintest.World) { w.Runtime = rt })
	// The change is stored; the failed reload is only logged.
	admintest.Expect(t, srv.Super.Do(t, "POST", "/admin/scripts", map[string]any{"trigger": "xrpc.query:app.test.q", "source": source}), 201, "")
	if list, err := srv.Store.ListScripts(context.Background()); err != nil || len(list) != 1 {
		t.Fatalf("stored: %v %v", list, err)
	}
}

func TestScriptPermissions(t *testing.T) {
	srv := admintest.New(t, storagetest.SQLite(t), mountScripts, nil)
	reader := srv.Caller(t, admins.ScriptsRead)
	manager := srv.Caller(t, admins.ScriptsManage)
	admintest.Expect(t, manager.Do(t, "POST", "/admin/scripts", map[string]any{"trigger": "xrpc.query:app.test.q", "source": source}), 201, "")
	id := listScripts(t, reader, "")[0].ID
	admintest.Expect(t, reader.Do(t, "GET", "/admin/scripts/"+id, nil), 200, "")
	admintest.Expect(t, reader.Do(t, "POST", "/admin/scripts", map[string]any{"trigger": "xrpc.query:app.test.r", "source": source}), 403, "insufficient permissions")
	admintest.Expect(t, reader.Do(t, "PATCH", "/admin/scripts/"+id, map[string]any{"source": source2}), 403, "insufficient permissions")
	admintest.Expect(t, reader.Do(t, "DELETE", "/admin/scripts/"+id, nil), 403, "insufficient permissions")
	admintest.Expect(t, manager.Do(t, "GET", "/admin/scripts", nil), 403, "insufficient permissions")
}

func mountScripts(m *adminapi.Mux, w *admintest.World) { scripts.Mount(m, w.Scripts()) }

// TestScriptCheck: POST /admin/scripts/check answers 200 {ok: true} for a
// source a create would accept and 400 with the create's message for one
// it would refuse; nothing is stored; scripts:read is enough; an
// instance that runs no scripts says it checks nothing.
func TestScriptCheck(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		rt := &admintest.Runtime{SyntaxError: "line:2(column:4) near 'end': syntax error"}
		srv := admintest.New(t, open(t), mountScripts, func(w *admintest.World) { w.Runtime = rt })
		reader := srv.Caller(t, admins.ScriptsRead)
		r := reader.Do(t, "POST", "/admin/scripts/check", map[string]any{"source": source})
		admintest.Expect(t, r, 200, "")
		if o := r.Object(t); o["ok"] != true || len(o) != 1 {
			t.Fatalf("check: %s", r.Raw)
		}
		r = reader.Do(t, "POST", "/admin/scripts/check", map[string]any{"source": "x\nline:2(column:4) near 'end': syntax error"})
		admintest.Expect(t, r, 400, "script has a syntax error: line:2(column:4) near 'end': syntax error")
		if o := r.Object(t); o["line"] != float64(2) || o["column"] != float64(4) {
			t.Fatalf("check: %s", r.Raw)
		}
		for name, body := range map[string]any{
			"no source":    map[string]any{},
			"empty source": map[string]any{"source": "  "},
		} {
			r := reader.Do(t, "POST", "/admin/scripts/check", body)
			if r.Status != 400 || r.Object(t)["line"] != nil {
				t.Errorf("%s: %d %s", name, r.Status, r.Raw)
			}
		}
		if list, err := srv.Store.ListScripts(context.Background()); err != nil || len(list) != 0 {
			t.Fatalf("the check stored %v (%v)", list, err)
		}
		if rt.Reloads != 0 || len(srv.Events(t, "script")) != 0 {
			t.Fatalf("the check reloaded (%d) or audited", rt.Reloads)
		}
		admintest.Expect(t, srv.Caller(t, admins.ScriptsManage).Do(t, "POST", "/admin/scripts/check", map[string]any{"source": source}),
			403, "insufficient permissions")
	})
	srv := admintest.New(t, storagetest.SQLite(t), mountScripts, func(w *admintest.World) { w.Runtime = nil })
	admintest.Expect(t, srv.Super.Do(t, "POST", "/admin/scripts/check", map[string]any{"source": source}),
		503, "this instance runs no scripts, so sources are not checked")
}

// TestErrorLine: the line and column of gopher-lua's messages.
func TestErrorLine(t *testing.T) {
	for msg, want := range map[string][2]int{
		"check line:3(column:3) near 'end':   syntax error\n":                         {3, 3},
		"check line:5(column:0) near 'abc':   unterminated string\n":                  {5, 0},
		"compile error near line(2) check: no visible label 'x' for <goto> at line 1": {1, 0},
		"compile error near line(7) check: something":                                 {7, 0},
		"script has a syntax error: check line:12(column:40) near 'x': syntax error":  {12, 40},
		"no line at all": {0, 0},
	} {
		if l, c := scripts.ErrorLine(msg); l != want[0] || c != want[1] {
			t.Errorf("%q: line %d column %d, want %v", msg, l, c, want)
		}
	}
}
