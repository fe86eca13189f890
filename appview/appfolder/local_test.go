package appfolder_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/appfolder"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// socialApp is the example app's folder.
const socialApp = "../../examples/social/app"

// copyFolder copies the folder src into a new temporary folder, with
// extra files (path: content) added, and returns it.
func copyFolder(t *testing.T, src string, extra map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	err := os.CopyFS(dir, os.DirFS(src))
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range extra {
		file := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// plan prepares dir against t and returns the plan as printed.
func plan(t *testing.T, target appfolder.Target, dir string, prune bool) (*appfolder.Plan, string) {
	t.Helper()
	_, p, err := appfolder.Prepare(context.Background(), dir, target, prune)
	if err != nil {
		t.Fatalf("prepare %s: %v", dir, err)
	}
	var out strings.Builder
	p.Print(&out)
	return p, out.String()
}

// TestApplyExport, on both databases: the example app's folder (with a
// trigger script, an index hook, an index and a variable added) applies
// to an empty instance, a second apply changes nothing, the instance
// exports to a folder that loads as the same definition and applies with
// no change, a broken script fails the whole plan with nothing changed,
// and --prune removes what the folder no longer has.
func TestApplyExport(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		t.Run("local", func(t *testing.T) {
			env := testenv.NewUnstarted(t, open(t), appview.Config{})
			testApplyExport(t, env.App, appfolder.Local(env.App))
		})
		t.Run("admin API", func(t *testing.T) {
			env := testenv.New(t, open(t), appview.Config{})
			key, err := env.App.Bootstrap(context.Background(), "did:plc:appfolderadmin00000000000", false)
			if err != nil {
				t.Fatal(err)
			}
			testApplyExport(t, env.App, appfolder.Remote(env.URL, key, nil))
		})
	})
}

// testApplyExport is TestApplyExport on target, an instance of app.
func testApplyExport(t *testing.T, app *appview.App, target appfolder.Target) {
	ctx := context.Background()
	dir := copyFolder(t, socialApp, map[string]string{
		"app.json": `{"lexicons": {"com.example.social.like": {"backfill": false}},
				"indexes": [{"collection": "com.example.social.post", "path": "topic"}], "variables": ["SOCIAL_TOKEN"]}`,
		"scripts/record.create/com.example.social.like.lua": "function handle() return record end\n",
		"scripts/com.example.social.post.index_hook.lua":    "function handle() return record end\n",
	})

	// A network lexicon is not the app's: neither exported nor pruned.
	const network = "com.example.net.thing"
	if _, err := app.Lexicons().Put(ctx, lexicon.Upload{Document: []byte(`{"lexicon":1,"id":"` + network + `","defs":{"main":{"type":"query"}}}`)}); err != nil {
		t.Fatal(err)
	}
	if err := app.Store().PutNetworkLexicon(ctx, storage.NetworkLexicon{NSID: network, AuthorityDID: "did:plc:net", LastFetchedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}

	p, out := plan(t, target, dir, false)
	if len(p.Lexicons) != 8 || len(p.Scripts) != 1 || len(p.Indexes) != 1 || p.Lexicons[0].Lexicon.Kind != "record" ||
		!strings.Contains(out, "+ lexicon com.example.social.getPost (query, new)") ||
		!strings.Contains(out, "note: script variable SOCIAL_TOKEN is not set") {
		t.Fatalf("first plan:\n%s", out)
	}
	if _, err := appfolder.Apply(ctx, target, p); err != nil {
		t.Fatal(err)
	}
	if l, ok := app.Lexicons().Snapshot().Get("com.example.social.post"); !ok || l.IndexHook == "" || l.Revision != 1 {
		t.Fatalf("stored post lexicon: %v, revision %d, index hook %q", ok, l.Revision, l.IndexHook)
	}
	if p, out := plan(t, target, dir, true); !p.Empty() || !strings.HasPrefix(out, "no changes\n") {
		t.Fatalf("second plan:\n%s", out)
	}

	exported := t.TempDir()
	have, err := target.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := appfolder.Write(exported, have); err != nil {
		t.Fatal(err)
	}
	if p, out := plan(t, target, exported, true); !p.Empty() {
		t.Fatalf("the exported folder's plan:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(exported, "lexicons/com/example/social/post.json")); err != nil {
		t.Errorf("exported layout: %v", err)
	}

	// A broken script and a changed lexicon: the plan fails, nothing changes.
	broken := copyFolder(t, dir, map[string]string{
		"scripts/com.example.social.getPost.lua": "function handle( return {} end",
		"lexicons/getPost.json":                  `{"lexicon":1,"id":"com.example.social.getPost","defs":{"main":{"type":"query"}}}`,
	})
	if _, _, err := appfolder.Prepare(ctx, broken, target, false); err == nil ||
		!strings.Contains(err.Error(), "scripts/com.example.social.getPost.lua: script has a syntax error") {
		t.Fatalf("broken folder: %v", err)
	}
	after, err := target.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p := appfolder.Diff(have, after, true); !p.Empty() {
		t.Fatalf("a failed plan changed the instance: %+v", p)
	}

	// A change, then prune: the folder without listTopic, its index and the trigger script.
	pruned := copyFolder(t, dir, nil)
	for _, name := range []string{"lexicons/listTopic.json", "scripts/com.example.social.listTopic.lua",
		"scripts/record.create/com.example.social.like.lua", "app.json"} {
		if err := os.Remove(filepath.Join(pruned, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(pruned, "scripts/com.example.social.getPost.lua"), []byte("function handle() return {} end\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, out = plan(t, target, pruned, false)
	if len(p.Lexicons) != 1 || !strings.Contains(out, "~ lexicon com.example.social.getPost (query, revision 1 -> 2: script)") ||
		!strings.Contains(out, "kept (--prune removes them): index com.example.social.post topic (value), "+
			"script record.create:com.example.social.like, lexicon com.example.social.listTopic") {
		t.Fatalf("plan without prune:\n%s", out)
	}
	p, out = plan(t, target, pruned, true)
	for _, line := range []string{"- lexicon com.example.social.listTopic (query, revision 1; its records stay)",
		"- script record.create:com.example.social.like", "- index com.example.social.post topic (value)"} {
		if !strings.Contains(out, line) {
			t.Errorf("pruning plan lacks %q:\n%s", line, out)
		}
	}
	if _, err := appfolder.Apply(ctx, target, p); err != nil {
		t.Fatal(err)
	}
	if p, out := plan(t, target, pruned, true); !p.Empty() {
		t.Fatalf("after prune:\n%s", out)
	}
	final, err := target.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := final.Lexicons["com.example.social.listTopic"]; ok || len(final.Scripts) != 0 || len(final.Indexes) != 0 ||
		len(final.Lexicons) != 7 {
		t.Errorf("after prune: lexicons %v, scripts %v, indexes %v", slices.Collect(maps.Keys(final.Lexicons)), final.Scripts, final.Indexes)
	}
	if _, ok := app.Lexicons().Snapshot().Get(network); !ok {
		t.Error("prune removed the network lexicon")
	}
}
