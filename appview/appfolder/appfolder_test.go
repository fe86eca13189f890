package appfolder

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
)

// writeFolder writes files (path in the folder: content) to a new
// temporary folder and returns it.
func writeFolder(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
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

const (
	noteDoc = `{"lexicon":1,"id":"com.example.note","defs":{"main":{"type":"record","key":"tid","record":{"type":"object","properties":{"text":{"type":"string"}}}}}}`
	listDoc = `{"lexicon":1,"id":"com.example.listNotes","defs":{"main":{"type":"query"}}}`
	listLua = "function handle() return {notes = db.query{collection = \"com.example.note\"}.records} end\n"
	hookLua = "function handle() return record end\n"
	appJSON = `{"lexicons": {"com.example.note": {"backfill": false}, "com.example.listNotes": {"target_collection": "com.example.note"}},
		"indexes": [{"collection": "com.example.note", "path": "text", "kind": "text"}, {"collection": "com.example.note", "path": "lang"}],
		"variables": ["NOTES_TOKEN"]}`
)

// noteFolder is a small app: a record lexicon with a query over it, the
// query's script, a record.create script, two indexes and a variable.
func noteFolder() map[string]string {
	return map[string]string{
		"app.json":                                   appJSON,
		"lexicons/note.json":                         noteDoc,
		"lexicons/queries/listNotes.json":            listDoc,
		"scripts/com.example.listNotes.lua":          listLua,
		"scripts/record.create/com.example.note.lua": hookLua,
		"scripts/label.arrive/_any.lua":              hookLua,
		"README.md":                                  "not part of the definition",
	}
}

func TestLoad(t *testing.T) {
	def, err := Load(writeFolder(t, noteFolder()))
	if err != nil {
		t.Fatal(err)
	}
	note, list := def.Lexicons["com.example.note"], def.Lexicons["com.example.listNotes"]
	if len(def.Lexicons) != 2 || note.Kind != lexicon.KindRecord || note.Backfill == nil || *note.Backfill ||
		note.File != "lexicons/note.json" {
		t.Errorf("note: %+v", note)
	}
	if list.Script != listLua || list.TargetCollection != "com.example.note" || list.Backfill != nil {
		t.Errorf("listNotes: %+v", list)
	}
	if len(def.Scripts) != 2 || def.Scripts["record.create:com.example.note"] != hookLua || def.Scripts["label.arrive:*"] != hookLua {
		t.Errorf("scripts: %v", def.Scripts)
	}
	want := []storage.FieldIndexSpec{
		{Collection: "com.example.note", Path: "lang", Kind: storage.FieldIndexValue},
		{Collection: "com.example.note", Path: "text", Kind: storage.FieldIndexText},
	}
	if len(def.Indexes) != 2 || def.Indexes[0] != want[0] || def.Indexes[1] != want[1] {
		t.Errorf("indexes: %+v", def.Indexes)
	}
	if len(def.Variables) != 1 || def.Variables[0] != "NOTES_TOKEN" {
		t.Errorf("variables: %v", def.Variables)
	}
}

// TestLoadRefuses: every problem of a folder is reported, by file.
func TestLoadRefuses(t *testing.T) {
	for name, c := range map[string]struct {
		change map[string]string
		want   []string
	}{
		"bad lexicon": {map[string]string{"lexicons/note.json": `{"lexicon":1,"id":"nope"}`}, []string{"lexicons/note.json:"}},
		"duplicate id": {map[string]string{"lexicons/again.json": noteDoc},
			[]string{"lexicon com.example.note is also in"}},
		"script of no lexicon": {map[string]string{"scripts/com.example.gone.lua": listLua},
			[]string{"scripts/com.example.gone.lua: no lexicon com.example.gone"}},
		"bad kind folder": {map[string]string{"scripts/record.created/com.example.note.lua": hookLua},
			[]string{"scripts/record.created/com.example.note.lua: a script is"}},
		"bad trigger": {map[string]string{"scripts/record.create/not-an-nsid.lua": hookLua},
			[]string{"scripts/record.create/not-an-nsid.lua: trigger has an invalid NSID"}},
		"manifest": {map[string]string{"app.json": `{"lexicons": {"com.example.gone": {}, "com.example.listNotes": {"backfill": true}},
			"indexes": [{"collection": "com.example.note", "path": ""}], "variables": ["1bad"]}`},
			[]string{"lexicons.com.example.gone: no such lexicon", "lexicons.com.example.listNotes: backfill is for record lexicons",
				"indexes[0]: path is required", `variables: "1bad"`}},
		"unknown manifest field": {map[string]string{"app.json": `{"lexicon": {}}`}, []string{`unknown field "lexicon"`}},
	} {
		t.Run(name, func(t *testing.T) {
			files := noteFolder()
			for k, v := range c.change {
				files[k] = v
			}
			_, err := Load(writeFolder(t, files))
			if err == nil {
				t.Fatal("loaded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestProblems: a folder's problems are listed by file, with their line
// where it can be told: a JSON syntax error's (app.json, a lexicon), a Lua
// compile error's; an error of no file is a problem without one.
func TestProblems(t *testing.T) {
	files := noteFolder()
	files["app.json"] = "{\n  \"indexes\": [\n    {\"collection\": 1}\n  ]\n}\n"
	files["lexicons/note.json"] = "{\"lexicon\": 1,\n\"id\": \"com.example.note\",\n}"
	files["scripts/com.example.gone.lua"] = listLua
	_, err := Load(writeFolder(t, files))
	got := map[string]int{}
	for _, p := range Problems(err) {
		got[p.File] = p.Line
		if p.Err == nil || !strings.Contains(err.Error(), p.File+": "+p.Err.Error()) {
			t.Errorf("problem %+v is not in %q", p, err)
		}
	}
	want := map[string]int{"app.json": 3, "lexicons/note.json": 3, "scripts/com.example.gone.lua": 0}
	if len(got) != len(want) {
		t.Fatalf("problems %v, want %v (%v)", got, want, err)
	}
	for file, line := range want {
		if l, ok := got[file]; !ok || l != line {
			t.Errorf("%s: line %d (listed %v), want %d", file, l, ok, line)
		}
	}

	def, err := Load(writeFolder(t, noteFolder()))
	if err != nil {
		t.Fatal(err)
	}
	err = Check(def, func(src string) error {
		if src == listLua {
			return errors.New("script has a syntax error: check line:7(column:3) near 'end':   syntax error")
		}
		return nil
	})
	if ps := Problems(err); len(ps) != 1 || ps[0].File != "scripts/com.example.listNotes.lua" || ps[0].Line != 7 {
		t.Errorf("compile error: %+v", ps)
	}
	if ps := Problems(errors.New("read the instance's definition: gone")); len(ps) != 1 || ps[0].File != "" || ps[0].Line != 0 {
		t.Errorf("an error of no file: %+v", ps)
	}
	if Problems(nil) != nil {
		t.Error("problems of no error")
	}
}

func TestCheck(t *testing.T) {
	def, err := Load(writeFolder(t, noteFolder()))
	if err != nil {
		t.Fatal(err)
	}
	var checked []string
	err = Check(def, func(src string) error {
		checked = append(checked, src)
		if src == listLua {
			return os.ErrInvalid
		}
		return nil
	})
	if len(checked) != 3 || err == nil || !strings.Contains(err.Error(), "scripts/com.example.listNotes.lua: ") {
		t.Errorf("checked %d sources, err %v", len(checked), err)
	}
}

// TestWriteLoad: a definition written and loaded back is the same, the
// new lexicons at their NSID's path, the existing ones where they were;
// what the definition no longer has is removed.
func TestWriteLoad(t *testing.T) {
	dir := writeFolder(t, noteFolder())
	def, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	delete(def.Scripts, "label.arrive:*")
	def.Lexicons["com.example.other.thing"] = Lexicon{ID: "com.example.other.thing", Kind: lexicon.KindQuery,
		Document: []byte(`{"lexicon":1,"id":"com.example.other.thing","defs":{"main":{"type":"query"}}}`)}
	if err := Write(dir, def); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"lexicons/note.json", "lexicons/queries/listNotes.json", "lexicons/com/example/other/thing.json", "README.md"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "scripts/label.arrive/_any.lua")); !os.IsNotExist(err) {
		t.Errorf("the removed script's file: %v", err)
	}
	back, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p := Diff(back, def, true); !p.Empty() {
		t.Errorf("written then loaded differs: %+v", p)
	}
}

func TestDiff(t *testing.T) {
	want, err := Load(writeFolder(t, noteFolder()))
	if err != nil {
		t.Fatal(err)
	}
	have := &Definition{Lexicons: map[string]Lexicon{}, Scripts: map[string]string{"xrpc.query:com.example.old": listLua},
		Indexes: []storage.FieldIndexSpec{{Collection: "com.example.note", Path: "lang", Kind: storage.FieldIndexValue}}}
	list := want.Lexicons["com.example.listNotes"]
	list.Revision, list.Script = 4, "-- older\n"
	// The same document, spaced and ordered differently.
	list.Document = []byte(`{"id": "com.example.listNotes", "lexicon": 1, "defs": {"main": {"type": "query"}}}`)
	have.Lexicons[list.ID] = list

	p := Diff(want, have, false)
	var out strings.Builder
	p.Print(&out)
	for _, line := range []string{
		"+ lexicon com.example.note (record, new)",
		"~ lexicon com.example.listNotes (query, revision 4 -> 5: script)",
		"+ script label.arrive:*", "+ script record.create:com.example.note",
		"+ index com.example.note text (text)",
		"not in the folder, kept (--prune removes them): script xrpc.query:com.example.old",
		"note: script variable NOTES_TOKEN is not set",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("plan lacks %q:\n%s", line, out.String())
		}
	}
	if strings.Contains(out.String(), "lang") || strings.Contains(out.String(), "no changes") {
		t.Errorf("plan:\n%s", out.String())
	}
	if p := Diff(want, have, true); len(p.Scripts) != 3 || p.Scripts[2] != (ScriptStep{Action: Remove, Trigger: "xrpc.query:com.example.old"}) {
		t.Errorf("pruned plan scripts: %+v", p.Scripts)
	}
	out.Reset()
	(&Plan{}).Print(&out)
	if out.String() != "no changes\n" {
		t.Errorf("empty plan: %q", out.String())
	}
}

// TestCheckIndexRoom: the folder's indexes and the instance's must fit in
// a collection together, since new ones are declared before old ones are
// dropped.
func TestCheckIndexRoom(t *testing.T) {
	text := func(paths ...string) []storage.FieldIndexSpec {
		var out []storage.FieldIndexSpec
		for _, p := range paths {
			out = append(out, storage.FieldIndexSpec{Collection: "com.example.note", Path: p, Kind: storage.FieldIndexText})
		}
		return out
	}
	want := &Definition{Indexes: text("a", "b", "c")}
	if err := checkIndexRoom(want, &Definition{Indexes: text("a", "b", "c", "d")}); err != nil {
		t.Errorf("the same indexes and one more: %v", err)
	}
	err := checkIndexRoom(want, &Definition{Indexes: text("d", "e")})
	if err == nil || !strings.Contains(err.Error(), "collection com.example.note would have 5 field indexes (5 text)") {
		t.Errorf("five text indexes: %v", err)
	}
}

// TestRemoteDefaultClient: Remote without a client does not fall back to
// http.DefaultClient, whose requests never time out.
func TestRemoteDefaultClient(t *testing.T) {
	r, ok := Remote("http://127.0.0.1:1", "key", nil).(remote)
	if !ok {
		t.Fatalf("Remote returned %T", Remote("http://127.0.0.1:1", "key", nil))
	}
	if r.client == http.DefaultClient || r.client.Timeout != RemoteTimeout {
		t.Fatalf("default client %+v, want a timeout of %v", r.client, RemoteTimeout)
	}
}
