package main

import (
	"context"
	"fmt"
	"net/url"
	"slices"
)

// The built-in XRPC methods of the link index (Constellation's API).
const (
	methodGetBacklinks      = "blue.microcosm.links.getBacklinks"
	methodGetBacklinksCount = "blue.microcosm.links.getBacklinksCount"
)

// kind is one kind of request, measured against both servers. A kind
// whose requests is nil is listed but not measured (missing says why):
// that is how a kind waiting for a feature is kept in the report.
type kind struct {
	name string
	// what describes the request for the report.
	what func(p *plan) string
	// requests returns the URLs of the kind's requests to the server at
	// base (a kind walking the server's own cursors asks the server).
	requests func(ctx context.Context, base string, p *plan) ([]string, error)
	missing  string
}

// kinds are the kinds of request, in the order they are measured.
var kinds = []kind{
	{
		name: "backlinks-rare",
		what: func(p *plan) string {
			return fmt.Sprintf("getBacklinks first page (default limit 16) of one of %d posts with %s likes", len(p.rare), p.rareRange())
		},
		requests: func(_ context.Context, base string, p *plan) ([]string, error) {
			return backlinkURLs(base, methodGetBacklinks, sourceLike, p.rare), nil
		},
	},
	{
		name: "backlinks-popular",
		what: func(p *plan) string {
			return fmt.Sprintf("getBacklinks first page (default limit 16) of one of the %d most liked posts (%d to %d likes)",
				len(p.popular), p.popular[len(p.popular)-1].links, p.popular[0].links)
		},
		requests: func(_ context.Context, base string, p *plan) ([]string, error) {
			return backlinkURLs(base, methodGetBacklinks, sourceLike, p.popular), nil
		},
	},
	{
		name: "backlinks-count",
		what: func(p *plan) string {
			return fmt.Sprintf("getBacklinksCount of the most liked post (%d likes)", p.popular[0].links)
		},
		requests: func(_ context.Context, base string, p *plan) ([]string, error) {
			return backlinkURLs(base, methodGetBacklinksCount, sourceLike, p.popular[:1]), nil
		},
	},
	{
		name: "query-eq",
		what: func(*plan) string {
			return fmt.Sprintf("%s: db.query first page (20) of the posts whose langs[0] (a declared value index) is one of %d languages, from 0.2%% to 50%% of the posts",
				methodPostsByLang, len(langs))
		},
		requests: queryEqURLs,
	},
	{
		name: "sort-deep",
		what: func(p *plan) string {
			return fmt.Sprintf("%s: db.query page of 50 posts sorted by createdAt (a declared value index) after one of ~1,000 cursors spread over the %d posts",
				methodPostsByTime, p.posts)
		},
		requests: sortDeepURLs,
	},
	// Two search kinds: a search ranks every post it matches, so that the
	// cost of a query grows with its matches, a thousandfold from the
	// phrases to the common words; in one kind the common ones would be
	// all that is measured.
	searchKind("search-rare", searchPhrase3, searchPhrase2),
	searchKind("search-common", searchWords2, searchWord),
}

// kindNames lists the kinds' names.
func kindNames() []string {
	var out []string
	for _, k := range kinds {
		out = append(out, k.name)
	}
	return out
}

// findKind returns the kind of that name.
func findKind(name string) (kind, bool) {
	i := slices.IndexFunc(kinds, func(k kind) bool { return k.name == name })
	if i < 0 {
		return kind{}, false
	}
	return kinds[i], true
}

// subject is a link target and the number of links to it.
type subject struct {
	uri   string
	links int
}

// plan is what the request sets are drawn from, known from the dataset's
// generation.
type plan struct {
	// rare are up to maxRare posts with 1 to rareMax likes, the least
	// liked first.
	rare []subject
	// popular are the popularN most liked posts, the most liked first.
	popular []subject
	// posts is the number of posts.
	posts int
	// searches are the search kinds' queries.
	searches []search
}

const (
	maxRare  = 1000
	rareMax  = 5
	popularN = 10
)

// newPlan picks the subjects of the backlink kinds.
func newPlan(d *dataset) *plan {
	p := &plan{posts: d.posts, searches: searchQueries(d)}
	// Rank order is like count order but for the draws' noise: sort.
	ranks := make([]int, len(d.likeCounts))
	for i := range ranks {
		ranks[i] = i
	}
	slices.SortStableFunc(ranks, func(a, b int) int { return d.likeCounts[b] - d.likeCounts[a] })
	for _, k := range ranks[:min(popularN, len(ranks))] {
		p.popular = append(p.popular, subject{uri: d.uri(cPost, d.subjectPost(k)), links: d.likeCounts[k]})
	}
	for i := len(ranks) - 1; i >= 0 && len(p.rare) < maxRare; i-- {
		if n := d.likeCounts[ranks[i]]; n >= 1 && n <= rareMax {
			p.rare = append(p.rare, subject{uri: d.uri(cPost, d.subjectPost(ranks[i])), links: n})
		}
	}
	return p
}

// rareRange describes the like counts of the rare subjects.
func (p *plan) rareRange() string {
	if len(p.rare) == 0 {
		return "no"
	}
	lo, hi, sum := p.rare[0].links, p.rare[0].links, 0
	for _, s := range p.rare {
		lo, hi, sum = min(lo, s.links), max(hi, s.links), sum+s.links
	}
	return fmt.Sprintf("%d to %d (mean %.1f)", lo, hi, float64(sum)/float64(len(p.rare)))
}

// backlinkURLs are requests of a backlink method for each subject.
func backlinkURLs(base, method, source string, subjects []subject) []string {
	out := make([]string, len(subjects))
	for i, s := range subjects {
		out[i] = base + "/xrpc/" + method + "?subject=" + url.QueryEscape(s.uri) + "&source=" + url.QueryEscape(source)
	}
	return out
}
