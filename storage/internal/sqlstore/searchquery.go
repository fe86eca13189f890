package sqlstore

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lexview/lexview/storage"
)

// The search syntax (storage.SearchQuery.Query, docs/queries.md): words,
// all of which must match; "quoted phrases", whose words must follow one
// another in one field; OR between alternatives (binding looser than the
// implicit AND: `a b OR c` is (a AND b) OR c); -word and -"phrase" to
// exclude; word* for the words starting with word. Letters and digits
// (and the marks that combine with them) make words; every other
// character separates them, so `e-mail` is the phrase "e mail" and
// punctuation alone is ignored. parseSearch turns a query into a
// searchExpr, which each dialect renders in its own search syntax
// (fts4Match, tsqueryExpr): user text never reaches the database's query
// parser except as the words found here.

// searchItem is a word or a phrase: its words, in order, the last one a
// prefix when prefix is set.
type searchItem struct {
	words  []string
	prefix bool
}

// searchGroup is one alternative of a query: every item of pos matches
// and none of neg does. pos is never empty.
type searchGroup struct {
	pos, neg []searchItem
}

// searchExpr is a parsed query: a record matches when one of its groups
// does. It has at least one group.
type searchExpr struct {
	groups []searchGroup
}

// minPrefixLen is the fewest characters a prefix search may have.
const minPrefixLen = 2

func invalidSearch(format string, a ...any) error {
	return fmt.Errorf("%w: search: %s", storage.ErrInvalidQuery, fmt.Sprintf(format, a...))
}

// parseSearch parses a query in the search syntax. Its errors wrap
// storage.ErrInvalidQuery and say what is wrong.
func parseSearch(q string) (searchExpr, error) {
	switch {
	case len(q) > storage.MaxSearchQueryLen:
		return searchExpr{}, invalidSearch("the query is longer than %d bytes", storage.MaxSearchQueryLen)
	case !utf8.ValidString(q):
		return searchExpr{}, invalidSearch("the query is not valid UTF-8")
	}
	var expr searchExpr
	var cur searchGroup
	words := 0
	orPending := false // an OR was read: a group must follow
	endGroup := func() error {
		if len(cur.pos) == 0 {
			if len(cur.neg) > 0 {
				return invalidSearch("every alternative needs a word that is not excluded with -")
			}
			return invalidSearch("OR needs words on both sides")
		}
		expr.groups = append(expr.groups, cur)
		cur = searchGroup{}
		return nil
	}
	add := func(it searchItem, negated bool) error {
		if len(it.words) == 0 {
			return nil // punctuation only
		}
		words += len(it.words)
		if words > storage.MaxSearchTerms {
			return invalidSearch("the query has more than %d words", storage.MaxSearchTerms)
		}
		if it.prefix && utf8.RuneCountInString(it.words[len(it.words)-1]) < minPrefixLen {
			return invalidSearch("a prefix search (word*) needs at least %d letters before the *", minPrefixLen)
		}
		if negated {
			cur.neg = append(cur.neg, it)
		} else {
			cur.pos = append(cur.pos, it)
		}
		orPending = false
		return nil
	}
	for i := 0; i < len(q); {
		r, size := utf8.DecodeRuneInString(q[i:])
		switch {
		case unicode.IsSpace(r) || unicode.IsControl(r):
			i += size
			continue
		case r == '"' || r == '-' && strings.HasPrefix(q[i+1:], `"`):
			negated := r == '-'
			if negated {
				i++
			}
			end := strings.IndexByte(q[i+1:], '"')
			if end < 0 {
				return searchExpr{}, invalidSearch(`a quoted phrase is not closed: add the closing "`)
			}
			if err := add(searchItem{words: searchWords(q[i+1 : i+1+end])}, negated); err != nil {
				return searchExpr{}, err
			}
			i += end + 2
			continue
		}
		// A bare word: up to the next space or quote.
		j := i
		for j < len(q) {
			r, size := utf8.DecodeRuneInString(q[j:])
			if r == '"' || unicode.IsSpace(r) || unicode.IsControl(r) {
				break
			}
			j += size
		}
		chunk := q[i:j]
		i = j
		if chunk == "OR" {
			if orPending || len(cur.pos)+len(cur.neg) == 0 {
				return searchExpr{}, invalidSearch("OR needs words on both sides")
			}
			if err := endGroup(); err != nil {
				return searchExpr{}, err
			}
			orPending = true
			continue
		}
		negated := strings.HasPrefix(chunk, "-")
		if negated {
			chunk = chunk[1:]
		}
		trimmed := strings.TrimRight(chunk, "*")
		it := searchItem{words: searchWords(trimmed)}
		// A prefix: the star ends the word ("ab*", not "ab.*").
		it.prefix = len(trimmed) < len(chunk) && trimmed != "" && isWordEnd(trimmed)
		if err := add(it, negated); err != nil {
			return searchExpr{}, err
		}
	}
	if orPending {
		return searchExpr{}, invalidSearch("OR needs words on both sides")
	}
	if len(cur.pos)+len(cur.neg) == 0 && len(expr.groups) == 0 {
		return searchExpr{}, invalidSearch("the query has no words to search for")
	}
	if err := endGroup(); err != nil {
		return searchExpr{}, err
	}
	return expr, nil
}

// isWordRune reports whether r belongs to a word: a letter, a digit or a
// combining mark (which the databases' tokenizers keep with its letter).
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.M, r)
}

// isWordEnd reports whether s ends with a word character.
func isWordEnd(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return isWordRune(r)
}

// searchWords splits s into its words: runs of word characters holding at
// least one letter or digit. Everything else separates them.
func searchWords(s string) []string {
	var out []string
	start := -1
	flush := func(end int) {
		if start >= 0 {
			w := s[start:end]
			if strings.IndexFunc(w, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }) >= 0 {
				out = append(out, w)
			}
			start = -1
		}
	}
	for i, r := range s {
		if isWordRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		flush(i)
	}
	flush(len(s))
	return out
}
