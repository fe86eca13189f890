package appview

import (
	"slices"
	"time"
)

// AppFolderStatus is the state of an app folder (docs/apps.md) that a
// program applies to the App and keeps applying as its files change:
// what `appview dev` and `appview serve --app` report through
// SetAppFolderStatus. GET /admin/stats answers it as app_folder, and the
// dashboard's overview shows it.
type AppFolderStatus struct {
	// Dir is the folder, as the program was given it.
	Dir string `json:"dir"`
	// Watching is true while the folder is watched for changes.
	Watching bool `json:"watching"`
	// Prune is true when what the folder does not have is removed from
	// the instance.
	Prune bool `json:"prune"`
	// AppliedAt is when the folder was last applied whole (with changes
	// or none); nil until it first was.
	AppliedAt *time.Time `json:"applied_at"`
	// ChangedAt is when an apply last changed something, and Changes are
	// the steps of that plan, as appfolder.Plan.Steps writes them
	// ("+ lexicon com.example.note (record, new)").
	ChangedAt *time.Time `json:"changed_at"`
	Changes   []string   `json:"changes"`
	// Problems are why the folder's current files could not be applied,
	// by file; empty when they were. While there are problems the
	// instance keeps what was applied before.
	Problems []AppFolderProblem `json:"problems"`
	// ProblemsAt is when the problems were found; nil without problems.
	ProblemsAt *time.Time `json:"problems_at"`
}

// AppFolderProblem is one problem of an app folder.
type AppFolderProblem struct {
	// File is the file's path in the folder ("scripts/com.example.listNotes.lua"),
	// "" for a problem of no one file (the instance could not be read).
	File string `json:"file,omitempty"`
	// Line is the line of the problem in File, from 1; 0 when it cannot
	// be told.
	Line int `json:"line,omitempty"`
	// Message says what is wrong.
	Message string `json:"message"`
}

// SetAppFolderStatus records the state of the app folder applied to the
// App, for GET /admin/stats (app_folder) and the dashboard. A program
// that applies and watches a folder calls it after each attempt; an App
// none was set on reports no app_folder.
func (a *App) SetAppFolderStatus(st AppFolderStatus) {
	st.Changes, st.Problems = slices.Clone(st.Changes), slices.Clone(st.Problems) // the caller may reuse its slices
	a.appFolder.Store(&st)
}

// appFolderStatus is the status set last, nil when none was.
func (a *App) appFolderStatus() *AppFolderStatus { return a.appFolder.Load() }
