// Package watch applies an app folder (package appfolder) to an instance
// and applies it again each time its files change: the loop behind
// `appview dev` and `appview serve --app` (docs/apps.md#develop).
//
// A folder that does not load or compile changes nothing: the instance
// keeps what was applied before, and the problems, by file and line, are
// in the Status until a later change fixes them.
//
// Changes are seen through fsnotify, which watches one directory at a
// time: the Watcher watches the folder itself (for app.json, and for
// lexicons/ and scripts/ appearing) and every directory under lexicons/
// and scripts/, adding the new ones as they are created. Editors that
// save by writing a new file and renaming it over the old one are seen
// as the Create of the new name.
package watch

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/appfolder"
)

// DefaultDebounce is how long a folder must stay quiet after a change
// before it is applied, when Options.Debounce is 0: an editor's save is a
// burst of writes, renames and removals.
const DefaultDebounce = 100 * time.Millisecond

// maxDelay bounds how long a stream of changes delays an apply.
const maxDelay = time.Second

// Options configure a Watcher.
type Options struct {
	// Dir is the app folder.
	Dir string
	// Target is the instance it is applied to (appfolder.Local(app)).
	Target appfolder.Target
	// Prune removes from the instance what the folder does not have
	// (apply's --prune).
	Prune bool
	// Debounce is how long the folder must stay quiet after a change
	// before it is applied; DefaultDebounce when 0.
	Debounce time.Duration
	// Report, when set, is called after each apply with what it did.
	// Calls do not overlap; it must not call the Watcher's methods (the
	// Update holds the Status).
	Report func(Update)
}

// Update is what one apply did.
type Update struct {
	// At is when it ran.
	At time.Time
	// Plan is the plan applied; nil when the folder could not be
	// prepared (Err).
	Plan *appfolder.Plan
	// Warnings are the uploads' warnings (a backfill job started).
	Warnings []string
	// Err is why the folder was not applied, or not whole (an apply that
	// failed part way keeps the steps before the failure); nil when it
	// was. appfolder.Problems lists it by file.
	Err error
	// Fixed is true when the folder applied after the apply before had
	// failed.
	Fixed bool
	// Status is the folder's status after this apply.
	Status appview.AppFolderStatus
}

// Watcher applies an app folder and watches it for changes.
type Watcher struct {
	opt   Options
	root  string // opt.Dir, cleaned
	fsw   *fsnotify.Watcher
	apply sync.Mutex // serialises applies and guards status and failed

	status appview.AppFolderStatus
	failed bool // the last apply failed
}

// New watches the folder opt.Dir: from its return on, a change of the
// folder is seen. It applies nothing: call Apply, then Run. Close (or
// the end of Run) stops the watching.
func New(opt Options) (*Watcher, error) {
	if opt.Debounce <= 0 {
		opt.Debounce = DefaultDebounce
	}
	root := filepath.Clean(opt.Dir)
	if info, err := os.Stat(root); err != nil {
		return nil, err
	} else if !info.IsDir() {
		return nil, &fs.PathError{Op: "watch", Path: opt.Dir, Err: errors.New("not a directory")}
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	w := &Watcher{opt: opt, root: root, fsw: fsw,
		status: appview.AppFolderStatus{Dir: opt.Dir, Watching: true, Prune: opt.Prune}}
	err = fsw.Add(root)
	for _, sub := range []string{appfolder.LexiconDir, appfolder.ScriptDir} {
		err = errors.Join(err, w.addTree(filepath.Join(root, sub)))
	}
	if err != nil {
		fsw.Close()
		return nil, err
	}
	return w, nil
}

// Close stops watching the folder.
func (w *Watcher) Close() error {
	w.apply.Lock()
	w.status.Watching = false
	w.apply.Unlock()
	return w.fsw.Close()
}

// Status returns the folder's status after the last apply.
func (w *Watcher) Status() appview.AppFolderStatus {
	w.apply.Lock()
	defer w.apply.Unlock()
	return cloneStatus(w.status)
}

// Apply applies the folder now, as `appview apply --yes` does, and
// reports it (Options.Report). A folder with any problem changes
// nothing. An apply that fails because ctx is done is not reported.
func (w *Watcher) Apply(ctx context.Context) Update {
	w.apply.Lock()
	defer w.apply.Unlock()
	up := Update{At: time.Now()}
	_, p, err := appfolder.Prepare(ctx, w.opt.Dir, w.opt.Target, w.opt.Prune)
	if err == nil {
		up.Plan = p
		up.Warnings, err = appfolder.Apply(ctx, w.opt.Target, p)
	}
	up.Err = err
	at := up.At
	if err != nil {
		w.status.Problems = problems(err)
		w.status.ProblemsAt = &at
	} else {
		up.Fixed = w.failed
		w.status.AppliedAt = &at
		w.status.Problems, w.status.ProblemsAt = nil, nil
	}
	if up.Plan != nil && !up.Plan.Empty() { // a failure part way changed something too
		w.status.ChangedAt = &at
		w.status.Changes = up.Plan.Steps()
	}
	w.failed = err != nil
	up.Status = cloneStatus(w.status)
	if w.opt.Report != nil && (err == nil || ctx.Err() == nil) {
		w.opt.Report(up)
	}
	return up
}

// problems is err as the status lists it.
func problems(err error) []appview.AppFolderProblem {
	var out []appview.AppFolderProblem
	for _, p := range appfolder.Problems(err) {
		out = append(out, appview.AppFolderProblem{File: p.File, Line: p.Line, Message: strings.TrimSpace(p.Err.Error())})
	}
	return out
}

func cloneStatus(st appview.AppFolderStatus) appview.AppFolderStatus {
	st.Changes = slices.Clone(st.Changes)
	st.Problems = slices.Clone(st.Problems)
	return st
}

// Run applies the folder after each change, once it has been quiet for
// Options.Debounce, until ctx is done; then it stops watching and
// returns nil. Call Apply first: Run applies on changes only.
func (w *Watcher) Run(ctx context.Context) error {
	defer w.Close()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var first time.Time // the first change not applied yet; zero when none
	changed := func() {
		now := time.Now()
		if first.IsZero() {
			first = now
		}
		timer.Reset(max(min(w.opt.Debounce, first.Add(maxDelay).Sub(now)), 0))
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return nil
			}
			if w.relevant(ev) {
				changed()
			}
		case _, ok := <-w.fsw.Errors:
			if !ok {
				return nil
			}
			changed() // an overflow lost events: read the folder again
		case <-timer.C:
			first = time.Time{}
			w.Apply(ctx)
		}
	}
}

// relevant reports whether ev may change the folder's definition:
// app.json, or anything under lexicons/ or scripts/. A directory created
// there is watched from now on, with those under it.
func (w *Watcher) relevant(ev fsnotify.Event) bool {
	if ev.Op == fsnotify.Chmod {
		return false
	}
	rel, err := filepath.Rel(w.root, ev.Name)
	if err != nil {
		return false
	}
	rel = filepath.ToSlash(rel)
	top, _, _ := strings.Cut(rel, "/")
	if rel != appfolder.ManifestFile && top != appfolder.LexiconDir && top != appfolder.ScriptDir {
		return false
	}
	if ev.Has(fsnotify.Create) {
		_ = w.addTree(ev.Name) // a directory that vanished again needs no watch
	}
	return true
}

// addTree watches dir and every directory under it; a dir that does not
// exist, or is not a directory, is not watched.
func (w *Watcher) addTree(dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil
		case err != nil:
			return err
		case !d.IsDir():
			return nil
		}
		return w.fsw.Add(path)
	})
}
