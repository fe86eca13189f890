package luascript

import (
	"fmt"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/lexview/lexview/script"
	"github.com/lexview/lexview/storage"
)

// db.labels(subject) → the labels that apply to one subject (an AT URI or
// a DID), an array; db.labels({subject, ...}) → a table of such arrays
// keyed by subject (subjects without labels are absent).
func (v *vm) dbLabels(L *lua.LState) int {
	var subjects []string
	one := ""
	switch arg := L.CheckAny(1).(type) {
	case lua.LString:
		one = string(arg)
		subjects = []string{one}
	case *lua.LTable:
		v.plain(arg)
		n := arg.Len()
		if n > maxLoadAll {
			L.RaiseError("db.labels: at most %d subjects", maxLoadAll)
		}
		subjects = make([]string, 0, n)
		for i := 1; i <= n; i++ {
			s, ok := arg.RawGetInt(i).(lua.LString)
			if !ok {
				L.RaiseError("db.labels: subject %d is not a string", i)
			}
			subjects = append(subjects, string(s))
		}
	default:
		L.RaiseError("db.labels: want a subject (AT URI or DID) or a list of them")
	}
	got, err := v.run.inv.Host.Labels(v.run.ctx, subjects)
	if err != nil {
		v.hostErr("db.labels", err)
	}
	if one != "" {
		L.Push(v.labelList(got[one]))
		return 1
	}
	out := L.CreateTable(0, len(got))
	v.charge(tableCost + int64(len(got))*(hashCost+fieldCost))
	for subject, labels := range got {
		out.RawSetString(subject, v.labelList(labels))
	}
	L.Push(out)
	return 1
}

// labelList is labels as a Lua array of label tables.
func (v *vm) labelList(labels []storage.Label) *lua.LTable {
	out := v.newArray(len(labels))
	v.charge(tableCost + int64(len(labels))*elemCost)
	for i, l := range labels {
		ev := script.LabelEvent{Src: l.Src, URI: l.URI, CID: l.CID, Val: l.Val, Neg: l.Neg, Cts: formatLabelTime(l.Cts), Exp: formatLabelTime(l.Exp)}
		out.RawSetInt(i+1, v.labelTable(&ev))
	}
	return out
}

// labelTable is one label as scripts see it: {src, uri, cid, val, neg,
// cts, exp}, leaving out empty cid and exp and a false neg.
func (v *vm) labelTable(l *script.LabelEvent) *lua.LTable {
	v.charge(tableCost + hashCost + 7*fieldCost + int64(len(l.Src)+len(l.URI)+len(l.CID)+len(l.Val)+len(l.Cts)+len(l.Exp)))
	return v.newLabelTable(l)
}

// newLabelTable is labelTable without the charge: for the label global,
// set before the run starts (a label is small: its fields are bounded
// by the subscription that checked it).
func (v *vm) newLabelTable(l *script.LabelEvent) *lua.LTable {
	t := v.L.CreateTable(0, 7)
	for _, f := range [...]struct{ k, v string }{{"src", l.Src}, {"uri", l.URI}, {"cid", l.CID}, {"val", l.Val}, {"cts", l.Cts}, {"exp", l.Exp}} {
		if f.v != "" {
			t.RawSetString(f.k, lua.LString(f.v))
		}
	}
	if l.Neg {
		t.RawSetString("neg", lua.LTrue)
	}
	return t
}

// formatLabelTime is t as scripts see times; "" for the zero time.
func formatLabelTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeLayout)
}

// parseLabelConditions reads db.query's labels option: one condition
// table or a list of them, each {has = values} or {none = values}, with
// optional from = labeler DIDs and account = true. Values and labelers
// are a string or a list of strings; "*" as has/none means any value.
func (v *vm) parseLabelConditions(val lua.LValue) ([]storage.LabelCondition, error) {
	t, ok := val.(*lua.LTable)
	if !ok {
		return nil, fmt.Errorf("want a condition table or a list of them")
	}
	v.plain(t)
	if t.RawGetString("has") != lua.LNil || t.RawGetString("none") != lua.LNil {
		c, err := v.parseLabelCondition(t)
		if err != nil {
			return nil, err
		}
		return []storage.LabelCondition{c}, nil
	}
	n := t.Len()
	if n == 0 {
		return nil, fmt.Errorf("want a condition table ({has = ...} or {none = ...}) or a list of them")
	}
	if n > storage.MaxLabelConditions {
		return nil, fmt.Errorf("at most %d conditions", storage.MaxLabelConditions)
	}
	out := make([]storage.LabelCondition, 0, n)
	for i := 1; i <= n; i++ {
		ct, ok := t.RawGetInt(i).(*lua.LTable)
		if !ok {
			return nil, fmt.Errorf("condition %d is not a table", i)
		}
		c, err := v.parseLabelCondition(v.plain(ct))
		if err != nil {
			return nil, fmt.Errorf("condition %d: %w", i, err)
		}
		out = append(out, c)
	}
	return out, nil
}

func (v *vm) parseLabelCondition(t *lua.LTable) (storage.LabelCondition, error) {
	var c storage.LabelCondition
	has, none := t.RawGetString("has"), t.RawGetString("none")
	values := has
	switch {
	case has != lua.LNil && none != lua.LNil:
		return c, fmt.Errorf("has and none cannot be combined (use two conditions)")
	case has == lua.LNil && none == lua.LNil:
		return c, fmt.Errorf("has or none is required")
	case none != lua.LNil:
		values, c.Absent = none, true
	}
	var err error
	if values != lua.LString("*") {
		if c.Values, err = stringList(values, "has/none"); err != nil {
			return c, err
		}
	}
	if from := t.RawGetString("from"); from != lua.LNil {
		if c.Sources, err = stringList(from, "from"); err != nil {
			return c, err
		}
	}
	switch a := t.RawGetString("account").(type) {
	case *lua.LNilType:
	case lua.LBool:
		c.Account = bool(a)
	default:
		return c, fmt.Errorf("account must be a boolean")
	}
	var unknown string
	t.ForEach(func(k, _ lua.LValue) {
		if s, ok := k.(lua.LString); !ok || s != "has" && s != "none" && s != "from" && s != "account" {
			unknown = lua.LVAsString(k)
		}
	})
	if unknown != "" {
		return c, fmt.Errorf("unknown key %q (want has, none, from, account)", unknown)
	}
	return c, nil
}

// stringList reads a string or a non-empty list of strings.
func stringList(val lua.LValue, what string) ([]string, error) {
	switch x := val.(type) {
	case lua.LString:
		return []string{string(x)}, nil
	case *lua.LTable:
		n := x.Len()
		if n == 0 {
			return nil, fmt.Errorf("%s is an empty list", what)
		}
		if n > storage.MaxLabelValues {
			return nil, fmt.Errorf("%s names more than %d", what, storage.MaxLabelValues)
		}
		out := make([]string, 0, n)
		for i := 1; i <= n; i++ {
			s, ok := x.RawGetInt(i).(lua.LString)
			if !ok {
				return nil, fmt.Errorf("%s[%d] is not a string", what, i)
			}
			out = append(out, string(s))
		}
		return out, nil
	default:
		return nil, fmt.Errorf("%s must be a string or a list of strings", what)
	}
}
