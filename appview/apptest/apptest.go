// Package apptest runs the tests an app folder declares (docs/apps.md,
// section Testing): each file tests/<name>.json of the folder is a test
// with fixture records, an optional acting account and steps (a query, a
// procedure, or a record event as if from the network), each with what it
// expects. Run gives every test a throwaway instance of its own: an App on
// SQLite in a temporary folder, the app folder applied to it through
// appfolder.Local, its fixtures indexed through the App's writer, and a
// stand-in PDS that records the procedures' writes. `appview test DIR` is
// this package; a Go test may call it too:
//
//	suite, err := apptest.Load("app")
//	...
//	report := apptest.Run(ctx, suite, apptest.Options{})
//	if !report.Passed() {
//		report.Print(os.Stderr)
//		t.Fail()
//	}
package apptest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/appfolder"
)

// TestDir is the folder of an app's tests, in the app folder.
const TestDir = "tests"

// Suite is an app folder with its tests.
type Suite struct {
	// App is the folder's definition, applied to each test's instance.
	App *appfolder.Definition
	// Tests are the folder's tests, sorted by name.
	Tests []*Test
}

// Test is one file tests/<name>.json.
type Test struct {
	// Name is the file's name without .json; File its path in the folder.
	Name string `json:"-"`
	File string `json:"-"`
	// Description says what the test is about.
	Description string `json:"description,omitempty"`
	// As is the DID of the account the test's calls act as ("" for
	// anonymous calls); a step may say otherwise.
	As string `json:"as,omitempty"`
	// Fixtures are JSON-lines files of records, relative to the tests
	// folder, indexed before the first step.
	Fixtures []string `json:"fixtures,omitempty"`
	// Records are fixture records written in the test itself, indexed
	// after those of Fixtures.
	Records []Record `json:"records,omitempty"`
	// Variables are script variables (vars) set on the instance.
	Variables map[string]string `json:"variables,omitempty"`
	// Steps run in order; the test fails at the first step that does.
	Steps []Step `json:"steps"`

	// fixtures are the records of Fixtures then Records.
	fixtures []Record
}

// Record is a record in a repository: a fixture, or the subject of an
// event. It is named by URI, or by Repo, Collection and RKey.
type Record struct {
	URI        string `json:"uri,omitempty"`
	Repo       string `json:"repo,omitempty"`
	Collection string `json:"collection,omitempty"`
	// RKey may be left out of a created record: a TID is picked.
	RKey string `json:"rkey,omitempty"`
	// Record is the record's value; its $type is the collection when
	// absent. None for a delete.
	Record json.RawMessage `json:"record,omitempty"`
	// CID is the record's CID; when left out, the one its value has in a
	// repository (appview records import takes the same lines).
	CID string `json:"cid,omitempty"`
}

// Step is one action of a test and what it expects: exactly one of
// Query, Procedure and Event.
type Step struct {
	// Name labels the step in reports.
	Name string `json:"name,omitempty"`
	// Query is the NSID of a query called with Params.
	Query  string         `json:"query,omitempty"`
	Params map[string]any `json:"params,omitempty"`
	// Procedure is the NSID of a procedure called with Input.
	Procedure string          `json:"procedure,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	// As overrides the test's acting account for this call; "" calls
	// anonymously.
	As *string `json:"as,omitempty"`
	// Event is a record change delivered to the App's writer as live
	// ingestion delivers one.
	Event *Event `json:"event,omitempty"`
	// Expect is what the step must give.
	Expect Expect `json:"expect"`
}

// Event is a record change from the network.
type Event struct {
	// Action is "create", "update" or "delete".
	Action string `json:"action"`
	Record
}

// Expect is what a step must give. Unset fields are not checked.
type Expect struct {
	// Status is a call's HTTP status; 200 when unset.
	Status int `json:"status,omitempty"`
	// Error is the `error` of a call's JSON body.
	Error string `json:"error,omitempty"`
	// Body is matched against a call's JSON body (see Match).
	Body json.RawMessage `json:"body,omitempty"`
	// Writes are the writes the call made to the PDS, all of them, in
	// order.
	Writes *[]Write `json:"writes,omitempty"`
	// Outcome is what the writer did with an event: "applied" (the
	// default), "skipped" (a record-event script or hook chose not to
	// store it), "rejected" (validation refused it), "flagged" (its
	// lexicon refuses it, and it is stored with that error: the
	// validation modes hide, the default, and flag) or "failed" (its
	// record-event script failed).
	Outcome string `json:"outcome,omitempty"`
	// Reason is a part of the rejection's, flag's or failure's message.
	Reason string `json:"reason,omitempty"`
	// Records are the stored records after the step, by AT URI, matched
	// against each record's value; null for a record that must not be
	// stored.
	Records map[string]json.RawMessage `json:"records,omitempty"`
}

// Write is a write to the PDS a procedure must make.
type Write struct {
	// Action is "create", "update" or "delete"; "create" when unset.
	Action string `json:"action,omitempty"`
	// Repo is the repository's DID; the caller's when unset.
	Repo       string `json:"repo,omitempty"`
	Collection string `json:"collection"`
	// RKey is checked when set.
	RKey string `json:"rkey,omitempty"`
	// Record is matched against the written record (see Match).
	Record json.RawMessage `json:"record,omitempty"`
}

// The outcomes of an event.
const (
	OutcomeApplied  = "applied"
	OutcomeSkipped  = "skipped"
	OutcomeRejected = "rejected"
	OutcomeFlagged  = "flagged"
	OutcomeFailed   = "failed"
)

// Load reads the app folder dir (appfolder.Load) and its tests.
func Load(dir string) (*Suite, error) {
	return LoadFS(os.DirFS(dir))
}

// LoadFS is Load of the app folder at the root of fsys. Every problem of
// the folder and of its tests is reported, by file.
func LoadFS(fsys fs.FS) (*Suite, error) {
	def, err := appfolder.LoadFS(fsys)
	if err != nil {
		return nil, err
	}
	s := &Suite{App: def}
	files, err := fs.Glob(fsys, TestDir+"/*.json")
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	var errs []error
	for _, file := range files {
		t, err := loadTest(fsys, file)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", file, err))
			continue
		}
		s.Tests = append(s.Tests, t)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return s, nil
}

// loadTest reads and checks one test file.
func loadTest(fsys fs.FS, file string) (*Test, error) {
	raw, err := fs.ReadFile(fsys, file)
	if err != nil {
		return nil, err
	}
	t := &Test{Name: strings.TrimSuffix(path.Base(file), ".json"), File: file}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(t); err != nil {
		return nil, err
	}
	for _, name := range t.Fixtures {
		recs, err := loadFixtures(fsys, path.Join(TestDir, name))
		if err != nil {
			return nil, err
		}
		t.fixtures = append(t.fixtures, recs...)
	}
	for i := range t.Records {
		if err := t.Records[i].check(true); err != nil {
			return nil, fmt.Errorf("records[%d]: %w", i, err)
		}
	}
	t.fixtures = append(t.fixtures, t.Records...)
	if len(t.Steps) == 0 {
		return nil, errors.New("no steps")
	}
	if err := checkDID(t.As); err != nil {
		return nil, fmt.Errorf("as: %w", err)
	}
	for i, st := range t.Steps {
		if err := st.check(); err != nil {
			return nil, fmt.Errorf("step %d: %w", i+1, err)
		}
	}
	return t, nil
}

// loadFixtures reads a JSON-lines file of records (blank lines and lines
// starting with // are skipped).
func loadFixtures(fsys fs.FS, file string) ([]Record, error) {
	raw, err := fs.ReadFile(fsys, file)
	if err != nil {
		return nil, fmt.Errorf("fixtures: %w", err)
	}
	var out []Record
	for n, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "//") {
			continue
		}
		var r Record
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		err := dec.Decode(&r)
		if err == nil {
			err = r.check(true)
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, n+1, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// check normalises r (its URI split into Repo, Collection and RKey) and
// checks it; a record value is required when withValue.
func (r *Record) check(withValue bool) error {
	if r.URI != "" {
		if r.Repo != "" || r.Collection != "" || r.RKey != "" {
			return errors.New("give either uri or repo, collection and rkey")
		}
		u, err := syntax.ParseATURI(r.URI)
		if err != nil || u.RecordKey() == "" || !u.Authority().IsDID() {
			return fmt.Errorf("uri %q is not the AT URI of a record in a repository named by DID", r.URI)
		}
		r.Repo, r.Collection, r.RKey = u.Authority().String(), u.Collection().String(), u.RecordKey().String()
	}
	if err := checkDID(r.Repo); err != nil || r.Repo == "" {
		return fmt.Errorf("repo %q is not a DID", r.Repo)
	}
	if _, err := syntax.ParseNSID(r.Collection); err != nil {
		return fmt.Errorf("collection %q is not an NSID", r.Collection)
	}
	if r.RKey != "" {
		if _, err := syntax.ParseRecordKey(r.RKey); err != nil {
			return fmt.Errorf("rkey %q: %w", r.RKey, err)
		}
	}
	if withValue {
		var obj map[string]json.RawMessage
		if json.Unmarshal(r.Record, &obj) != nil || obj == nil {
			return errors.New("record must be a JSON object")
		}
	}
	if r.CID != "" {
		if !withValue {
			return errors.New("cid is given with a record's value only")
		}
		if _, err := syntax.ParseCID(r.CID); err != nil {
			return fmt.Errorf("cid %q: %w", r.CID, err)
		}
	}
	return nil
}

// checkDID accepts "" or a DID.
func checkDID(s string) error {
	if s == "" {
		return nil
	}
	_, err := syntax.ParseDID(s)
	return err
}

// check checks a step's shape.
func (st *Step) check() error {
	kinds := 0
	for _, set := range []bool{st.Query != "", st.Procedure != "", st.Event != nil} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		return errors.New("a step is exactly one of query, procedure and event")
	}
	if st.As != nil {
		if err := checkDID(*st.As); err != nil {
			return fmt.Errorf("as: %w", err)
		}
	}
	e := st.Expect
	if st.Event != nil {
		switch st.Event.Action {
		case "create", "update":
			if err := st.Event.check(true); err != nil {
				return fmt.Errorf("event: %w", err)
			}
		case "delete":
			if err := st.Event.check(false); err != nil {
				return fmt.Errorf("event: %w", err)
			}
			if st.Event.RKey == "" {
				return errors.New("event: a delete names its record's rkey")
			}
		default:
			return fmt.Errorf("event: action %q is not create, update or delete", st.Event.Action)
		}
		if e.Status != 0 || e.Error != "" || e.Body != nil || e.Writes != nil {
			return errors.New("an event expects an outcome and records, not a status, error, body or writes")
		}
		switch e.Outcome {
		case "", OutcomeApplied, OutcomeSkipped, OutcomeRejected, OutcomeFlagged, OutcomeFailed:
		default:
			return fmt.Errorf("outcome %q is not applied, skipped, rejected or failed", e.Outcome)
		}
	} else {
		nsid := st.Query + st.Procedure
		if _, err := syntax.ParseNSID(nsid); err != nil {
			return fmt.Errorf("%q is not an NSID", nsid)
		}
		if e.Outcome != "" || e.Reason != "" {
			return errors.New("a call expects a status, error, body and writes, not an outcome")
		}
		if st.Query != "" && e.Writes != nil {
			return errors.New("a query makes no writes")
		}
		if st.Query != "" && st.Input != nil {
			return errors.New("a query takes params, not input")
		}
	}
	if e.Body != nil {
		if err := checkPattern(e.Body); err != nil {
			return fmt.Errorf("expect.body: %w", err)
		}
	}
	for uri, want := range e.Records {
		if u, err := syntax.ParseATURI(uri); err != nil || u.RecordKey() == "" {
			return fmt.Errorf("expect.records: %q is not a record's AT URI", uri)
		}
		if err := checkPattern(want); err != nil {
			return fmt.Errorf("expect.records[%s]: %w", uri, err)
		}
	}
	if e.Writes != nil {
		for i, w := range *e.Writes {
			switch w.Action {
			case "", "create", "update", "delete":
			default:
				return fmt.Errorf("expect.writes[%d]: action %q is not create, update or delete", i, w.Action)
			}
			if w.Collection == "" {
				return fmt.Errorf("expect.writes[%d]: collection is required", i)
			}
			if w.Record != nil {
				if err := checkPattern(w.Record); err != nil {
					return fmt.Errorf("expect.writes[%d].record: %w", i, err)
				}
			}
		}
	}
	return nil
}

// label names a step in reports: its name, else what it does.
func (st *Step) label() string {
	what := ""
	switch {
	case st.Query != "":
		what = "query " + st.Query
	case st.Procedure != "":
		what = "procedure " + st.Procedure
	default:
		what = st.Event.Action + " event at://" + st.Event.Repo + "/" + st.Event.Collection + "/" + st.Event.RKey
	}
	if st.Name != "" {
		return st.Name + " (" + what + ")"
	}
	return what
}
