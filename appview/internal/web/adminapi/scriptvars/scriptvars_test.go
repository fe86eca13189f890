package scriptvars_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/scripts"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/adminapi/internal/admintest"
	"github.com/lexview/lexview/appview/internal/web/adminapi/scriptvars"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

type variable struct {
	Key       string `json:"key"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

func listVars(t *testing.T, c *admintest.Caller) ([]variable, string) {
	t.Helper()
	r := c.Do(t, "GET", "/admin/script-variables", nil)
	admintest.Expect(t, r, 200, "")
	var body struct {
		Variables []variable `json:"variables"`
	}
	r.JSON(t, &body)
	if body.Variables == nil {
		t.Fatalf("variables is not an array: %s", r.Raw)
	}
	return body.Variables, string(r.Raw)
}

func set(t *testing.T, c *admintest.Caller, key, value string) {
	t.Helper()
	r := c.Do(t, "POST", "/admin/script-variables", map[string]any{"key": key, "value": value})
	admintest.Expect(t, r, 200, "")
	if o := r.Object(t); o["key"] != key || len(o) != 1 {
		t.Fatalf("set answer: %s", r.Raw)
	}
}

func TestScriptVariables(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		srv := admintest.New(t, open(t), mountVars, nil)
		su := srv.Super
		ctx := context.Background()

		set(t, su, "API_TOKEN", "s3cret-value")
		set(t, su, "_private.x-1", "")
		set(t, su, "zeta", "one")
		time.Sleep(5 * time.Millisecond)
		set(t, su, "zeta", "two") // replaces

		list, raw := listVars(t, su)
		if len(list) != 3 || list[0].Key != "API_TOKEN" || list[1].Key != "_private.x-1" || list[2].Key != "zeta" {
			t.Fatalf("list: %s", raw)
		}
		if strings.Contains(raw, "s3cret") || strings.Contains(raw, "value") || strings.Contains(raw, "sealed") {
			t.Fatalf("list reveals values: %s", raw)
		}
		if z := list[2]; z.CreatedAt == "" || z.UpdatedAt <= z.CreatedAt {
			t.Fatalf("replaced variable times: %+v", z)
		}

		// Sealed at rest, bound to the key.
		stored, err := srv.Store.ListScriptVariables(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range stored {
			if strings.Contains(v.Sealed, "s3cret") || strings.Contains(v.Sealed, "two") || v.Sealed == "" {
				t.Fatalf("stored in the clear: %+v", v)
			}
		}
		vars, err := scripts.Open(ctx, srv.Store, srv.World.Sealer)
		if err != nil || len(vars) != 3 || vars["API_TOKEN"] != "s3cret-value" || vars["zeta"] != "two" {
			t.Fatalf("open: %v %v", vars, err)
		}
		if v, ok := vars["_private.x-1"]; !ok || v != "" {
			t.Fatalf("empty value: %q %v", v, ok)
		}
		// A sealed value moved to another key does not open there.
		if err := srv.Store.PutScriptVariable(ctx, storage.ScriptVariable{Key: "moved", Sealed: stored[0].Sealed,
			CreatedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		vars, err = scripts.Open(ctx, srv.Store, srv.World.Sealer)
		if err == nil || !strings.Contains(err.Error(), `"moved"`) || len(vars) != 3 {
			t.Fatalf("moved value: %v %v", vars, err)
		}
		if _, err := scripts.Open(ctx, srv.Store, nil); err == nil {
			t.Fatal("open without a sealer")
		}

		admintest.Expect(t, su.Do(t, "DELETE", "/admin/script-variables/moved", nil), 204, "")
		admintest.Expect(t, su.Do(t, "DELETE", "/admin/script-variables/zeta", nil), 204, "")
		admintest.Expect(t, su.Do(t, "DELETE", "/admin/script-variables/zeta", nil), 404, "script variable not found")
		if list, raw := listVars(t, su); len(list) != 2 {
			t.Fatalf("after delete: %s", raw)
		}

		// Changes drop the runtime's cached variables: 4 sets, 2 deletes.
		if n := srv.World.Runtime.Invalidations(); n != 6 {
			t.Fatalf("invalidations: %d", n)
		}
		events := srv.Events(t, "script_variable")
		if len(events) != 6 || events[0].Type != "script_variable.deleted" || events[0].Subject != "zeta" ||
			events[5].Type != "script_variable.set" || events[5].Subject != "API_TOKEN" {
			t.Fatalf("events: %+v", events)
		}
		for _, e := range events {
			if strings.Contains(string(e.Detail), "s3cret") || e.ActorDID != su.DID {
				t.Fatalf("event: %+v", e)
			}
		}
	})
}

func TestScriptVariableBadInput(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		srv := admintest.New(t, open(t), mountVars, nil)
		keyMsg := "key must be 1 to 128 characters of letters, digits, _, . and -, starting with a letter or _"
		cases := []struct {
			name string
			body any
			msg  string
		}{
			{"malformed", []byte(`{"key": `), "invalid request body"},
			{"no key", map[string]any{"value": "x"}, "key is required"},
			{"digit first", map[string]any{"key": "1abc", "value": "x"}, keyMsg},
			{"dot first", map[string]any{"key": ".abc", "value": "x"}, keyMsg},
			{"space", map[string]any{"key": "a b", "value": "x"}, keyMsg},
			{"slash", map[string]any{"key": "a/b", "value": "x"}, keyMsg},
			{"non-ascii", map[string]any{"key": "clé", "value": "x"}, keyMsg},
			{"too long", map[string]any{"key": "a" + strings.Repeat("b", 128), "value": "x"}, keyMsg},
			{"no value", map[string]any{"key": "a"}, "value is required"},
			{"null value", map[string]any{"key": "a", "value": nil}, "value is required"},
			{"number value", map[string]any{"key": "a", "value": 5}, "invalid request body"},
			{"large value", map[string]any{"key": "a", "value": strings.Repeat("v", scripts.MaxValueSize+1)},
				"value must be at most 65536 bytes"},
		}
		for _, c := range cases {
			r := srv.Super.Do(t, "POST", "/admin/script-variables", c.body)
			if r.Status != 400 || r.Error(t) != c.msg {
				t.Errorf("%s: %d %s", c.name, r.Status, r.Raw)
			}
		}
		set(t, srv.Super, "a"+strings.Repeat("b", 127), strings.Repeat("v", scripts.MaxValueSize))
		if list, raw := listVars(t, srv.Super); len(list) != 1 {
			t.Fatalf("list: %s", raw)
		}
	})
}

func TestScriptVariablesWithoutSealer(t *testing.T) {
	srv := admintest.New(t, storagetest.SQLite(t), mountVars, func(w *admintest.World) { w.Sealer = nil; w.Runtime = nil })
	admintest.Expect(t, srv.Super.Do(t, "POST", "/admin/script-variables", map[string]any{"key": "a", "value": "b"}),
		503, "token encryption is not configured")
	if list, _ := listVars(t, srv.Super); len(list) != 0 {
		t.Fatalf("list: %v", list)
	}
	if vars, err := scripts.Open(context.Background(), srv.Store, nil); err != nil || len(vars) != 0 {
		t.Fatalf("open nothing: %v %v", vars, err)
	}
}

func TestScriptVariablePermissions(t *testing.T) {
	srv := admintest.New(t, storagetest.SQLite(t), mountVars, nil)
	reader := srv.Caller(t, admins.ScriptVariablesRead)
	creator := srv.Caller(t, admins.ScriptVariablesCreate)
	deleter := srv.Caller(t, admins.ScriptVariablesDelete)
	set(t, creator, "k", "v")
	listVars(t, reader)
	admintest.Expect(t, reader.Do(t, "POST", "/admin/script-variables", map[string]any{"key": "k", "value": "w"}), 403, "insufficient permissions")
	admintest.Expect(t, creator.Do(t, "DELETE", "/admin/script-variables/k", nil), 403, "insufficient permissions")
	admintest.Expect(t, deleter.Do(t, "GET", "/admin/script-variables", nil), 403, "insufficient permissions")
	admintest.Expect(t, deleter.Do(t, "DELETE", "/admin/script-variables/k", nil), 204, "")
}

func mountVars(m *adminapi.Mux, w *admintest.World) { scriptvars.Mount(m, w.Variables()) }
