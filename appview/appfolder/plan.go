package appfolder

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
)

// Action is what a plan does to one thing.
type Action string

// The actions of a plan.
const (
	Add    Action = "add"
	Change Action = "change"
	Remove Action = "remove"
)

// LexiconStep is the upload or removal of one lexicon.
type LexiconStep struct {
	Action Action
	// Lexicon is the folder's (Add, Change) or the instance's (Remove).
	Lexicon Lexicon
	// Revision is the instance's revision before the step (0 for Add).
	Revision int
	// Fields name what a Change changes ("document", "script", ...).
	Fields []string
}

// ScriptStep is the creation, replacement or removal of one
// trigger-keyed script.
type ScriptStep struct {
	Action  Action
	Trigger string
	Source  string // "" for Remove
}

// IndexStep declares (Add) or drops (Remove) one field index.
type IndexStep struct {
	Action Action
	Spec   storage.FieldIndexSpec
}

// Plan is what applying a folder changes on an instance, in the order
// Apply runs it: lexicon uploads (record lexicons first), scripts,
// index declarations, then the removals (with prune only).
type Plan struct {
	Lexicons []LexiconStep
	Scripts  []ScriptStep
	Indexes  []IndexStep
	// Kept name what the instance has and the folder does not, left as
	// it is because the plan does not prune ("lexicon com.example.old").
	Kept []string
	// UnsetVariables are the variables the folder names that the
	// instance does not have: scripts reading them get nil until an
	// operator sets them.
	UnsetVariables []string
}

// Empty reports whether the plan changes nothing.
func (p *Plan) Empty() bool { return len(p.Lexicons)+len(p.Scripts)+len(p.Indexes) == 0 }

// Diff compares the folder's definition want with the instance's have
// and returns the plan that makes have hold want. With prune, what have
// holds and want does not is removed; without, it is listed in Kept.
// Variables are never changed: a definition holds their names only.
func Diff(want, have *Definition, prune bool) *Plan {
	p := &Plan{}
	keep := func(what, name string) { p.Kept = append(p.Kept, what+" "+name) }
	ids := sortedKeys(want.Lexicons)
	// Record lexicons first: a query's target collection and refs to
	// records read better once the records are there.
	slices.SortStableFunc(ids, func(a, b string) int {
		return boolRank(want.Lexicons[a].Kind != lexicon.KindRecord) - boolRank(want.Lexicons[b].Kind != lexicon.KindRecord)
	})
	for _, id := range ids {
		w := want.Lexicons[id]
		h, ok := have.Lexicons[id]
		switch {
		case !ok:
			p.Lexicons = append(p.Lexicons, LexiconStep{Action: Add, Lexicon: w})
		case len(differences(w, h)) > 0:
			p.Lexicons = append(p.Lexicons, LexiconStep{Action: Change, Lexicon: w, Revision: h.Revision, Fields: differences(w, h)})
		}
	}
	for _, trigger := range sortedKeys(want.Scripts) {
		src := want.Scripts[trigger]
		switch old, ok := have.Scripts[trigger]; {
		case !ok:
			p.Scripts = append(p.Scripts, ScriptStep{Action: Add, Trigger: trigger, Source: src})
		case old != src:
			p.Scripts = append(p.Scripts, ScriptStep{Action: Change, Trigger: trigger, Source: src})
		}
	}
	wantIdx := map[string]bool{}
	for _, spec := range want.Indexes {
		wantIdx[indexKey(spec)] = true
	}
	haveIdx := map[string]bool{}
	for _, spec := range have.Indexes {
		haveIdx[indexKey(spec)] = true
	}
	for _, spec := range want.Indexes {
		if !haveIdx[indexKey(spec)] {
			p.Indexes = append(p.Indexes, IndexStep{Action: Add, Spec: spec})
		}
	}
	// Removals: indexes, then scripts, then lexicons.
	for _, spec := range have.Indexes {
		switch {
		case wantIdx[indexKey(spec)]:
		case prune:
			p.Indexes = append(p.Indexes, IndexStep{Action: Remove, Spec: spec})
		default:
			keep("index", describeIndex(spec))
		}
	}
	for _, trigger := range sortedKeys(have.Scripts) {
		switch _, ok := want.Scripts[trigger]; {
		case ok:
		case prune:
			p.Scripts = append(p.Scripts, ScriptStep{Action: Remove, Trigger: trigger})
		default:
			keep("script", trigger)
		}
	}
	for _, id := range sortedKeys(have.Lexicons) {
		h := have.Lexicons[id]
		switch _, ok := want.Lexicons[id]; {
		case ok:
		case prune:
			p.Lexicons = append(p.Lexicons, LexiconStep{Action: Remove, Lexicon: h, Revision: h.Revision})
		default:
			keep("lexicon", id)
		}
	}
	for _, v := range want.Variables {
		if !slices.Contains(have.Variables, v) {
			p.UnsetVariables = append(p.UnsetVariables, v)
		}
	}
	return p
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// describeIndex is an index as the plan shows it: "value index on
// com.example.post topic".
func describeIndex(s storage.FieldIndexSpec) string {
	return fmt.Sprintf("%s %s (%s)", s.Collection, s.Path, s.Kind)
}

// signs are the plan's marks by action.
var signs = map[Action]string{Add: "+", Change: "~", Remove: "-"}

// Steps are the plan's steps, one line each, as Print writes them:
// "+ lexicon com.example.note (record, new)", "~ script
// record.create:com.example.note", "- index ...".
func (p *Plan) Steps() []string {
	var out []string
	for _, s := range p.Lexicons {
		var what string
		switch s.Action {
		case Add:
			what = "new"
		case Change:
			what = fmt.Sprintf("revision %d -> %d: %s", s.Revision, s.Revision+1, strings.Join(s.Fields, ", "))
		case Remove:
			what = fmt.Sprintf("revision %d; its records stay", s.Revision)
		}
		out = append(out, fmt.Sprintf("%s lexicon %s (%s, %s)", signs[s.Action], s.Lexicon.ID, s.Lexicon.Kind, what))
	}
	for _, s := range p.Scripts {
		out = append(out, fmt.Sprintf("%s script %s", signs[s.Action], s.Trigger))
	}
	for _, s := range p.Indexes {
		out = append(out, fmt.Sprintf("%s index %s", signs[s.Action], describeIndex(s.Spec)))
	}
	return out
}

// Print writes the plan for a person: one line per step, then what is
// kept and the unset variables; "no changes" when it is empty.
func (p *Plan) Print(w io.Writer) {
	for _, line := range p.Steps() {
		fmt.Fprintln(w, line)
	}
	if p.Empty() {
		fmt.Fprintln(w, "no changes")
	}
	if len(p.Kept) > 0 {
		fmt.Fprintf(w, "not in the folder, kept (--prune removes them): %s\n", strings.Join(p.Kept, ", "))
	}
	for _, v := range p.UnsetVariables {
		fmt.Fprintf(w, "note: script variable %s is not set on the instance (POST /admin/script-variables sets it)\n", v)
	}
}
