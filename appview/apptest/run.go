package apptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/lexview/lexview/internal/oauthtest"
	"github.com/lexview/lexview/storage"
)

// Options tune Run.
type Options struct {
	// Select runs only the tests it accepts (by name); nil runs all.
	Select func(name string) bool
	// Logger receives the instances' logs; nil discards them.
	Logger *slog.Logger
	// Progress, when set, is called with each test's result as it ends.
	Progress func(Result)
}

// Report is the outcome of a run.
type Report struct {
	Results []Result
}

// Result is the outcome of one test.
type Result struct {
	Name, File string
	// Err says why the test could not run: its instance did not start,
	// the app did not apply, a fixture was refused.
	Err error
	// Failure is the step that failed; nil when every step passed.
	Failure *Failure
	// Steps counts the steps that passed.
	Steps int
}

// Failure is a step that did not give what it expects.
type Failure struct {
	// Step is the step's number, from 1; Label names it.
	Step  int
	Label string
	// Diffs say what differs, one line each (see Match).
	Diffs []string
	// Got is what the step gave, as indented JSON: a call's body, the
	// writes to the PDS, the stored records ("" when nothing is shown).
	Got string
}

// Passed reports whether the test passed.
func (r Result) Passed() bool { return r.Err == nil && r.Failure == nil }

// Passed reports whether every test passed.
func (r *Report) Passed() bool { return r.Failed() == 0 }

// Failed counts the tests that did not pass.
func (r *Report) Failed() int {
	n := 0
	for _, res := range r.Results {
		if !res.Passed() {
			n++
		}
	}
	return n
}

// Run runs the tests of s, each on a throwaway instance of its own, one
// after the other, and reports their results. A canceled ctx fails the
// tests not yet run.
func Run(ctx context.Context, s *Suite, opt Options) *Report {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Report{}
	for _, t := range s.Tests {
		if opt.Select != nil && !opt.Select(t.Name) {
			continue
		}
		res := runTest(ctx, s, t, opt.Logger)
		r.Results = append(r.Results, res)
		if opt.Progress != nil {
			opt.Progress(res)
		}
	}
	return r
}

// runTest runs one test on an instance of its own.
func runTest(ctx context.Context, s *Suite, t *Test, logger *slog.Logger) Result {
	res := Result{Name: t.Name, File: t.File}
	if err := ctx.Err(); err != nil {
		res.Err = err
		return res
	}
	in, err := startInstance(ctx, s.App, t, logger)
	if err != nil {
		res.Err = err
		return res
	}
	defer in.close()
	for i := range t.Steps {
		st := &t.Steps[i]
		f, err := in.runStep(ctx, t, st)
		if err != nil {
			res.Err = fmt.Errorf("step %d, %s: %w", i+1, st.label(), err)
			return res
		}
		if f != nil {
			f.Step, f.Label = i+1, st.label()
			res.Failure = f
			return res
		}
		res.Steps++
	}
	return res
}

// runStep runs st and returns what it did not give as expected (nil when
// it passed); an error when it could not run.
func (in *instance) runStep(ctx context.Context, t *Test, st *Step) (*Failure, error) {
	var f Failure
	if st.Event != nil {
		if err := in.event(ctx, st, &f); err != nil {
			return nil, err
		}
	} else if err := in.callStep(ctx, t, st, &f); err != nil {
		return nil, err
	}
	if err := in.checkRecords(ctx, st.Expect.Records, &f); err != nil {
		return nil, err
	}
	if len(f.Diffs) == 0 {
		return nil, nil
	}
	return &f, nil
}

// callStep calls a query or procedure and checks its answer and the
// writes it made to the PDS.
func (in *instance) callStep(ctx context.Context, t *Test, st *Step, f *Failure) error {
	as := t.As
	if st.As != nil {
		as = *st.As
	}
	before := len(in.pds.Operations())
	var status int
	var body []byte
	var err error
	if st.Query != "" {
		status, body, err = in.call(ctx, http.MethodGet, "/xrpc/"+st.Query+queryString(st.Params), nil, as)
	} else {
		input := []byte(st.Input)
		if input == nil {
			input = []byte{}
		}
		status, body, err = in.call(ctx, http.MethodPost, "/xrpc/"+st.Procedure, input, as)
	}
	if err != nil {
		return err
	}
	want := st.Expect
	if want.Status == 0 {
		want.Status = http.StatusOK
	}
	if status != want.Status {
		f.Diffs = append(f.Diffs, fmt.Sprintf("status: want %d, got %d", want.Status, status))
	}
	if want.Error != "" {
		var e struct {
			Error any `json:"error"`
		}
		json.Unmarshal(body, &e)
		if e.Error != want.Error {
			f.Diffs = append(f.Diffs, fmt.Sprintf("error: want %q, got %s", want.Error, show(e.Error)))
		}
	}
	if want.Body != nil {
		diffs, err := Match(want.Body, body)
		if err != nil {
			diffs = []string{"body: " + err.Error()}
		}
		f.Diffs = append(f.Diffs, diffs...)
	}
	if len(f.Diffs) > 0 {
		f.Got = indent(body)
	}
	if want.Writes != nil {
		in.checkWrites(*want.Writes, in.pds.Operations()[before:], as, f)
	}
	return nil
}

// checkWrites compares the writes a call made to the PDS with those
// expected.
func (in *instance) checkWrites(want []Write, got []oauthtest.Operation, caller string, f *Failure) {
	n := len(f.Diffs)
	if len(got) != len(want) {
		f.Diffs = append(f.Diffs, fmt.Sprintf("writes: want %d, got %d", len(want), len(got)))
	}
	for i := range min(len(want), len(got)) {
		w, g := want[i], got[i]
		at := fmt.Sprintf("writes[%d]", i)
		action, repo := w.Action, w.Repo
		if action == "" {
			action = "create"
		}
		if repo == "" {
			repo = caller
		}
		for _, c := range [][3]string{{"action", action, g.Action}, {"repo", repo, g.DID},
			{"collection", w.Collection, g.Collection}, {"rkey", w.RKey, g.Rkey}} {
			if c[1] != "" && c[1] != c[2] {
				f.Diffs = append(f.Diffs, fmt.Sprintf("%s.%s: want %q, got %q", at, c[0], c[1], c[2]))
			}
		}
		if w.Record != nil {
			value := g.Value
			if value == nil {
				value = json.RawMessage("null")
			}
			diffs, err := Match(w.Record, value)
			if err != nil {
				diffs = []string{"$: " + err.Error()}
			}
			for _, d := range diffs {
				f.Diffs = append(f.Diffs, at+".record"+strings.TrimPrefix(d, "$"))
			}
		}
	}
	if len(f.Diffs) > n {
		f.Got = joinShown(f.Got, "writes", describeWrites(got))
	}
}

// event delivers st's event to the App's writer and checks its outcome.
func (in *instance) event(ctx context.Context, st *Step, f *Failure) error {
	ev := st.Event
	c, err := in.change(storage.ChangeOp(ev.Action), ev.Record)
	if err != nil {
		return err
	}
	res, err := in.app.Writer().Write(ctx, source, []storage.Change{c})
	if err != nil {
		return err
	}
	outcome, reason := OutcomeApplied, ""
	switch {
	case len(res.Rejected) > 0:
		outcome, reason = OutcomeRejected, res.Rejected[0].Err.Error()
	case len(res.ScriptFailed) > 0:
		outcome, reason = OutcomeFailed, res.ScriptFailed[0].Err.Error()
	case res.Skipped > 0:
		outcome = OutcomeSkipped
	case len(res.Flagged) > 0:
		outcome, reason = OutcomeFlagged, res.Flagged[0].Err.Error()
	}
	want := st.Expect.Outcome
	if want == "" {
		want = OutcomeApplied
	}
	if outcome != want {
		d := fmt.Sprintf("outcome: want %s, got %s", want, outcome)
		if reason != "" {
			d += ": " + reason
		}
		f.Diffs = append(f.Diffs, d)
	} else if st.Expect.Reason != "" && !strings.Contains(reason, st.Expect.Reason) {
		f.Diffs = append(f.Diffs, fmt.Sprintf("reason: want a message containing %q, got %q", st.Expect.Reason, reason))
	}
	return nil
}

// checkRecords compares the stored records with those expected.
func (in *instance) checkRecords(ctx context.Context, want map[string]json.RawMessage, f *Failure) error {
	uris := make([]string, 0, len(want))
	for uri := range want {
		uris = append(uris, uri)
	}
	slices.Sort(uris)
	n := len(f.Diffs)
	shown := map[string]json.RawMessage{}
	for _, uri := range uris {
		rec, err := in.app.Store().GetRecord(ctx, uri)
		found := err == nil
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		pattern := want[uri]
		switch {
		case string(pattern) == "null":
			if found {
				f.Diffs = append(f.Diffs, fmt.Sprintf("records[%s]: want no record, got one", uri))
				shown[uri] = rec.Value
			}
			continue
		case !found:
			f.Diffs = append(f.Diffs, fmt.Sprintf("records[%s]: not stored", uri))
			shown[uri] = json.RawMessage("null")
			continue
		}
		diffs, err := Match(pattern, rec.Value)
		if err != nil {
			diffs = []string{"$: " + err.Error()}
		}
		for _, d := range diffs {
			f.Diffs = append(f.Diffs, fmt.Sprintf("records[%s]%s", uri, strings.TrimPrefix(d, "$")))
		}
		if len(diffs) > 0 {
			shown[uri] = rec.Value
		}
	}
	if len(f.Diffs) > n {
		raw, _ := json.Marshal(shown)
		f.Got = joinShown(f.Got, "records", indent(raw))
	}
	return nil
}

// queryString encodes a step's params: strings as they are, numbers and
// booleans as JSON writes them, an array as the parameter repeated.
func queryString(params map[string]any) string {
	if len(params) == 0 {
		return ""
	}
	v := url.Values{}
	for k, p := range params {
		items, ok := p.([]any)
		if !ok {
			items = []any{p}
		}
		for _, item := range items {
			if s, ok := item.(string); ok {
				v.Add(k, s)
			} else {
				raw, _ := json.Marshal(item)
				v.Add(k, string(raw))
			}
		}
	}
	return "?" + v.Encode()
}

// indent is a JSON body indented for a report (as it is when it is not
// JSON).
func indent(raw []byte) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	out, _ := json.MarshalIndent(v, "", "  ")
	return string(out)
}

// joinShown adds a titled part to what a failure shows.
func joinShown(got, title, part string) string {
	if got == "" {
		return part
	}
	return got + "\n" + title + ":\n" + part
}

// describeWrites shows writes to the PDS as indented JSON.
func describeWrites(ops []oauthtest.Operation) string {
	type shown struct {
		Action string          `json:"action"`
		URI    string          `json:"uri"`
		Record json.RawMessage `json:"record,omitempty"`
	}
	out := make([]shown, len(ops))
	for i, op := range ops {
		out[i] = shown{op.Action, op.URI, op.Value}
	}
	raw, _ := json.Marshal(out)
	return indent(raw)
}

// Print writes the report: a line per test, PASS or FAIL, then for each
// failure its step, what differs and what the step gave, and a summary
// line.
func (r *Report) Print(w io.Writer) {
	for _, res := range r.Results {
		res.Print(w)
	}
	Summary(w, r)
}

// Summary writes the report's last line: "ok: 3 tests passed" or
// "FAIL: 1 of 3 tests failed".
func Summary(w io.Writer, r *Report) {
	if failed := r.Failed(); failed > 0 {
		fmt.Fprintf(w, "FAIL: %d of %s failed\n", failed, plural(len(r.Results), "test"))
		return
	}
	fmt.Fprintf(w, "ok: %s passed\n", plural(len(r.Results), "test"))
}

// Print writes the result's line and, when it failed, why.
func (r Result) Print(w io.Writer) {
	if r.Passed() {
		fmt.Fprintf(w, "PASS %s (%s)\n", r.Name, plural(r.Steps, "step"))
		return
	}
	fmt.Fprintf(w, "FAIL %s (%s)\n", r.Name, r.File)
	if r.Err != nil {
		fmt.Fprintf(w, "    error: %v\n", r.Err)
		return
	}
	f := r.Failure
	fmt.Fprintf(w, "    step %d, %s:\n", f.Step, f.Label)
	for _, d := range f.Diffs {
		fmt.Fprintf(w, "      %s\n", d)
	}
	if f.Got != "" {
		fmt.Fprintf(w, "    got:\n")
		for line := range strings.SplitSeq(f.Got, "\n") {
			fmt.Fprintf(w, "      %s\n", line)
		}
	}
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
