package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"

	"github.com/lexview/lexview/lexicon"
)

// methodSearchPosts is the search kinds' query method: a query lexicon
// whose Lua script calls db.search once over the posts' text index
// (fieldIndexes) and returns its page, as an app would write it.
const methodSearchPosts = "app.bench.feed.searchPosts"

// searchUpload is the query lexicon of methodSearchPosts and its script.
var searchUpload = lexicon.Upload{
	Document: []byte(`{"lexicon":1,"id":"` + methodSearchPosts + `","defs":{"main":{"type":"query",
"parameters":{"type":"params","required":["q"],"properties":{
"q":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":100},"cursor":{"type":"string"}}},
"output":{"encoding":"application/json"}}}}`),
	TargetCollection: collPost,
	Script: `function handle()
  return db.search{collection = "` + collPost + `", query = params.q, limit = tonumber(params.limit) or 20, cursor = params.cursor}
end`,
}

// searchShape is a shape of search query. The posts' words are drawn
// uniformly from words (dataset.go), so that no word is rare: how many
// posts a query matches comes from its shape.
type searchShape int

const (
	// searchWord is one word: about a quarter of the posts hold it.
	searchWord searchShape = iota
	// searchWords2 is two words, both of which must match.
	searchWords2
	// searchPhrase2 is a quoted phrase of two words.
	searchPhrase2
	// searchPhrase3 is a quoted phrase of three words found in a post.
	searchPhrase3
	searchShapes
)

var shapeNames = [searchShapes]string{"one word", "two words", "two-word phrase", "three-word phrase"}

// searchesPerShape is the number of queries of each shape.
const searchesPerShape = 8

// search is one query of the search kinds and the posts it matches.
type search struct {
	shape   searchShape
	q       string
	matches int
}

// searchQueries chooses the queries of each shape, deterministically from
// the dataset, among its ASCII words (those that every tokenizer, with or
// without accents removed, keeps as they are), and counts the posts each
// one matches.
func searchQueries(d *dataset) []search {
	var ascii []string
	for _, w := range words {
		if strings.Trim(w, "abcdefghijklmnopqrstuvwxyz") == "" {
			ascii = append(ascii, w)
		}
	}
	rng := rand.New(rand.NewPCG(d.seed, 0x736561726368))
	pick := func(n int) []string {
		out := make([]string, n)
		for i, k := range rng.Perm(len(ascii))[:n] {
			out[i] = ascii[k]
		}
		return out
	}
	var out []search
	for range searchesPerShape {
		out = append(out,
			search{shape: searchWord, q: pick(1)[0]},
			search{shape: searchWords2, q: strings.Join(pick(2), " ")},
			search{shape: searchPhrase2, q: `"` + strings.Join(pick(2), " ") + `"`})
	}
	// Three consecutive ASCII words of random posts.
	for tries := 0; countShape(out, searchPhrase3) < searchesPerShape && tries < 1000; tries++ {
		tokens := strings.Fields(string(d.postText(nil, rng.IntN(d.posts))))
		i := rng.IntN(len(tokens))
		if i+3 <= len(tokens) && strings.Trim(strings.Join(tokens[i:i+3], ""), "abcdefghijklmnopqrstuvwxyz") == "" {
			out = append(out, search{shape: searchPhrase3, q: `"` + strings.Join(tokens[i:i+3], " ") + `"`})
		}
	}
	countMatches(d, out)
	return out
}

// countShape counts the queries of a shape.
func countShape(ss []search, shape searchShape) int {
	n := 0
	for _, s := range ss {
		if s.shape == shape {
			n++
		}
	}
	return n
}

// countMatches counts the posts each query matches: for words, the posts
// holding them all; for a phrase, those holding its words one after
// another. A post's words are its text split at spaces (the dataset's
// words hold no other separator).
func countMatches(d *dataset, ss []search) {
	var buf []byte
	for j := range d.posts {
		buf = d.postText(buf[:0], j)
		text := " " + string(buf) + " "
		for i := range ss {
			if matchesPost(ss[i], text) {
				ss[i].matches++
			}
		}
	}
}

// matchesPost reports whether the post whose text, between spaces, is
// text matches s.
func matchesPost(s search, text string) bool {
	if phrase, ok := strings.CutPrefix(s.q, `"`); ok {
		return strings.Contains(text, " "+strings.TrimSuffix(phrase, `"`)+" ")
	}
	for _, w := range strings.Fields(s.q) {
		if !strings.Contains(text, " "+w+" ") {
			return false
		}
	}
	return true
}

// searchKind is a search kind over the queries of some shapes.
func searchKind(name string, shapes ...searchShape) kind {
	pick := func(p *plan) []search {
		var out []search
		for _, s := range p.searches {
			for _, sh := range shapes {
				if s.shape == sh {
					out = append(out, s)
				}
			}
		}
		return out
	}
	return kind{
		name: name,
		what: func(p *plan) string {
			var b strings.Builder
			fmt.Fprintf(&b, "%s: db.search top 20 over the %d posts' text (a declared text index):", methodSearchPosts, p.posts)
			for i, sh := range shapes {
				lo, hi, n := 0, 0, 0
				for _, s := range pick(p) {
					if s.shape == sh {
						if n == 0 || s.matches < lo {
							lo = s.matches
						}
						hi, n = max(hi, s.matches), n+1
					}
				}
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, " %d queries of %s (%d to %d matches)", n, shapeNames[sh], lo, hi)
			}
			b.WriteString("; queries (matches):")
			for _, s := range pick(p) {
				fmt.Fprintf(&b, " %s (%d)", s.q, s.matches)
			}
			return b.String()
		},
		requests: func(_ context.Context, base string, p *plan) ([]string, error) {
			var out []string
			for _, s := range pick(p) {
				out = append(out, base+"/xrpc/"+methodSearchPosts+"?limit=20&q="+url.QueryEscape(s.q))
			}
			return out, nil
		},
	}
}
