package watch_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/appfolder"
	"github.com/lexview/lexview/appview/appfolder/watch"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/storage/storagetest"
)

const (
	hello       = "com.example.dev.hello"
	helloScript = "scripts/" + hello + ".lua"
	note        = "com.example.dev.note"
	noteFile    = "lexicons/com/example/dev/note.json"
)

// script is a query script answering {greeting = word}.
func script(word string) string {
	return "function handle()\n  return {greeting = \"" + word + "\"}\nend\n"
}

// noteLexicon is a record lexicon whose record has the property prop.
func noteLexicon(prop string) string {
	return `{"lexicon": 1, "id": "` + note + `", "defs": {"main": {"type": "record", "key": "tid",
  "record": {"type": "object", "properties": {"` + prop + `": {"type": "string"}}}}}}`
}

// write writes content to the file name of dir, creating its folders.
func write(t *testing.T, dir, name, content string) {
	t.Helper()
	file := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// eventually waits until cond holds, failing the test after a generous
// deadline (a loaded machine's, not a measure of speed).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// reports collects a Watcher's updates.
type reports struct {
	mu      sync.Mutex
	updates []watch.Update
}

func (r *reports) add(u watch.Update) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.updates = append(r.updates, u)
}

func (r *reports) fixed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, u := range r.updates {
		if u.Fixed {
			return true
		}
	}
	return false
}

// TestWatch: a folder applied, then watched: an edit of a script is live;
// a script that does not compile and a lexicon that does not parse leave
// the instance as it was and are in the status by file and line, until a
// fix clears them (reported as fixed); a lexicon in a new subdirectory
// is applied, and so is a later edit of it there; a save by rename (a new
// file renamed over the old, or the old renamed to a backup and a new one
// written) is seen; app.json's settings apply; with prune, a removed file
// removes its lexicon.
func TestWatch(t *testing.T) {
	env := testenv.NewUnstarted(t, storagetest.SQLite(t), appview.Config{})
	app := env.App
	dir := t.TempDir()
	write(t, dir, "lexicons/hello.json", `{"lexicon": 1, "id": "`+hello+`", "defs": {"main": {"type": "query"}}}`)
	write(t, dir, helloScript, script("one"))

	var got reports
	w, err := watch.New(watch.Options{Dir: dir, Target: appfolder.Local(app), Prune: true, Report: got.add})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	if up := w.Apply(ctx); up.Err != nil || len(up.Plan.Lexicons) != 1 ||
		!up.Status.Watching || up.Status.AppliedAt == nil || len(up.Status.Changes) != 1 {
		t.Fatalf("first apply: %+v", up)
	}
	go func() { done <- w.Run(ctx) }()

	scriptIs := func(word string) func() bool {
		return func() bool {
			l, ok := app.Lexicons().Snapshot().Get(hello)
			return ok && strings.Contains(l.Script, `"`+word+`"`)
		}
	}
	problem := func(file string) func() bool {
		return func() bool {
			st := w.Status()
			return len(st.Problems) == 1 && st.Problems[0].File == file
		}
	}
	noProblems := func() bool { return len(w.Status().Problems) == 0 }

	// An edit in place.
	write(t, dir, helloScript, script("two"))
	eventually(t, "the edited script live", scriptIs("two"))

	// A script that does not compile: the instance keeps "two".
	write(t, dir, helloScript, "function handle()\n  return {\nend\n")
	eventually(t, "the broken script reported", problem(helloScript))
	st := w.Status()
	if p := st.Problems[0]; p.Line != 3 || !strings.Contains(p.Message, "syntax error") || st.ProblemsAt == nil {
		t.Errorf("problem: %+v", st)
	}
	if !scriptIs("two")() {
		t.Fatal("a broken script changed the instance")
	}
	write(t, dir, helloScript, script("three"))
	eventually(t, "the fixed script live", scriptIs("three"))
	eventually(t, "the problem cleared", noProblems)
	if !got.fixed() {
		t.Error("no update was reported as fixed")
	}

	// A lexicon in a new subdirectory, then an edit of it there.
	write(t, dir, noteFile, noteLexicon("text"))
	noteHas := func(prop string) func() bool {
		return func() bool {
			l, ok := app.Lexicons().Snapshot().Get(note)
			return ok && strings.Contains(string(l.Raw), `"`+prop+`"`)
		}
	}
	eventually(t, "the new subdirectory's lexicon applied", noteHas("text"))
	write(t, dir, noteFile, noteLexicon("title"))
	eventually(t, "the edit in the new subdirectory applied", noteHas("title"))

	// A lexicon that does not parse, with its line.
	write(t, dir, noteFile, "{\n  \"lexicon\": 1,\n  \"id\": \""+note+"\",\n}\n")
	eventually(t, "the broken lexicon reported", problem(noteFile))
	if p := w.Status().Problems[0]; p.Line != 4 {
		t.Errorf("broken lexicon: %+v", p)
	}
	if !noteHas("title")() {
		t.Fatal("a broken lexicon changed the instance")
	}

	// Saves by rename: a new file renamed over the old one (an atomic
	// save), which also fixes the lexicon...
	tmp := filepath.Join(dir, "lexicons/com/example/dev/.note.json.tmp")
	if err := os.WriteFile(tmp, []byte(noteLexicon("body")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, filepath.FromSlash(noteFile))); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the atomic save applied", noteHas("body"))
	eventually(t, "the lexicon's problem cleared", noProblems)
	// ...and the old one renamed to a backup, a new one written and the
	// backup removed (vim's).
	file := filepath.Join(dir, filepath.FromSlash(helloScript))
	if err := os.Rename(file, file+"~"); err != nil {
		t.Fatal(err)
	}
	write(t, dir, helloScript, script("four"))
	if err := os.Remove(file + "~"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the backup-and-write save applied", scriptIs("four"))

	// app.json: a query's target collection.
	write(t, dir, appfolder.ManifestFile, `{"lexicons": {"`+hello+`": {"target_collection": "`+note+`"}}}`)
	eventually(t, "the target collection set", func() bool {
		l, ok := app.Lexicons().Snapshot().Get(hello)
		return ok && l.TargetCollection == note
	})

	// Prune: the removed lexicon's file removes it.
	if err := os.RemoveAll(filepath.Join(dir, "lexicons/com")); err != nil {
		t.Fatal(err)
	}
	write(t, dir, appfolder.ManifestFile, `{}`)
	eventually(t, "the removed lexicon pruned", func() bool {
		_, ok := app.Lexicons().Snapshot().Get(note)
		return !ok
	})
	if st := w.Status(); !st.Prune || st.ChangedAt == nil || !strings.HasPrefix(st.Changes[len(st.Changes)-1], "- lexicon "+note) {
		t.Errorf("status after prune: %+v", st)
	}
}

// TestNewMissingFolder: a folder that does not exist is an error.
func TestNewMissingFolder(t *testing.T) {
	if _, err := watch.New(watch.Options{Dir: filepath.Join(t.TempDir(), "absent")}); err == nil {
		t.Fatal("watching a missing folder")
	}
}
