package sqlstore

import (
	"slices"
	"strings"
)

// PostgreSQL's search: search_docs (migration 0031) holds one tsvector per
// record of a collection with text indexes, each text index's words
// weighted with its slot's label (slot 0 'A' to slot 3 'D'), so that a
// query can name the fields it searches by their labels. tsqueryExpr
// renders a parsed query as an SQL expression of type tsquery built with
// to_tsquery from the words parseSearch found, quoted: the user's text
// never meets to_tsquery's parser but as quoted words.

// searchSlot is a text index searched: its slot in the search document
// and, on PostgreSQL, its text-search configuration.
type searchSlot struct {
	slot   int
	config string
}

// slotLabel is the tsvector weight label of a slot.
func slotLabel(slot int) byte { return "ABCD"[slot] }

// tsqueryExpr renders e as an SQL expression of type tsquery, with "?"
// placeholders for args, that matches in the given slots only. Each word
// or phrase is to_tsquery(config, text) with the text made of its quoted
// words labelled with the slots' weights; a phrase is written once per
// label, so that its words must follow one another within one field (the
// tsvector's positions run on from one field into the next). Slots with
// different configurations (indexes declared under different settings)
// each get their own to_tsquery, joined with ||.
func tsqueryExpr(e searchExpr, slots []searchSlot) (string, []any) {
	var configs []string
	labels := map[string]string{}
	for _, s := range slots {
		if _, ok := labels[s.config]; !ok {
			configs = append(configs, s.config)
		}
		labels[s.config] += string(slotLabel(s.slot))
	}
	slices.Sort(configs)
	var b strings.Builder
	var args []any
	item := func(it searchItem) {
		b.WriteByte('(')
		for i, c := range configs {
			if i > 0 {
				b.WriteString(" || ")
			}
			b.WriteString("to_tsquery(?::regconfig, ?)")
			args = append(args, c, tsqueryText(it, labels[c]))
		}
		b.WriteByte(')')
	}
	b.WriteByte('(')
	for gi, g := range e.groups {
		if gi > 0 {
			b.WriteString(" || ")
		}
		b.WriteByte('(')
		for i, it := range g.pos {
			if i > 0 {
				b.WriteString(" && ")
			}
			item(it)
		}
		for _, it := range g.neg {
			b.WriteString(" && (!!")
			item(it)
			b.WriteByte(')')
		}
		b.WriteByte(')')
	}
	b.WriteByte(')')
	return b.String(), args
}

// tsqueryText writes an item in to_tsquery's syntax restricted to the
// weight labels: 'word':AB, 'pre':*AB, or a phrase ('a':A <-> 'b':A) |
// ('a':B <-> 'b':B). Words hold letters, digits and marks only
// (searchWords): no quote or backslash to escape.
func tsqueryText(it searchItem, labels string) string {
	word := func(b *strings.Builder, w string, prefix bool, label string) {
		b.WriteByte('\'')
		b.WriteString(w)
		b.WriteString("':")
		if prefix {
			b.WriteByte('*')
		}
		b.WriteString(label)
	}
	var b strings.Builder
	if len(it.words) == 1 {
		word(&b, it.words[0], it.prefix, labels)
		return b.String()
	}
	for li := range len(labels) {
		if li > 0 {
			b.WriteString(" | ")
		}
		b.WriteByte('(')
		for i, w := range it.words {
			if i > 0 {
				b.WriteString(" <-> ")
			}
			word(&b, w, it.prefix && i == len(it.words)-1, labels[li:li+1])
		}
		b.WriteByte(')')
	}
	return b.String()
}
