package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"

	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/scripts/internal/benchkit"
	"github.com/lexview/lexview/storage"
)

// The query methods of the field-index kinds: query lexicons whose Lua
// scripts call db.query once and return its page, as an app would write
// them. The planner answers them from the value indexes declared on the
// posts' langs[0] and createdAt (fieldIndexes). The search kinds' method
// is in searchkinds.go.
const (
	methodPostsByLang = "app.bench.feed.postsByLang"
	methodPostsByTime = "app.bench.feed.postsByTime"
)

// fieldIndexes are the indexes declared on the posts: value indexes on
// langs[0] and createdAt, and a text index on text (the search kinds').
var fieldIndexes = []storage.FieldIndexSpec{
	{Collection: collPost, Path: "langs[0]", Kind: storage.FieldIndexValue},
	{Collection: collPost, Path: "createdAt", Kind: storage.FieldIndexValue},
	{Collection: collPost, Path: "text", Kind: storage.FieldIndexText},
}

// queryUploads are the query lexicons and their scripts.
var queryUploads = []lexicon.Upload{
	{
		Document: []byte(`{"lexicon":1,"id":"` + methodPostsByLang + `","defs":{"main":{"type":"query",
"parameters":{"type":"params","required":["lang"],"properties":{
"lang":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":100},"cursor":{"type":"string"}}},
"output":{"encoding":"application/json"}}}}`),
		TargetCollection: collPost,
		Script: `function handle()
  return db.query{filter = {field = "langs[0]", value = params.lang}, limit = tonumber(params.limit) or 20, cursor = params.cursor}
end`,
	},
	{
		Document: []byte(`{"lexicon":1,"id":"` + methodPostsByTime + `","defs":{"main":{"type":"query",
"parameters":{"type":"params","properties":{
"limit":{"type":"integer","minimum":1,"maximum":100},"cursor":{"type":"string"}}},
"output":{"encoding":"application/json"}}}}`),
		TargetCollection: collPost,
		Script: `function handle()
  return db.query{sort = "createdAt", sortDirection = "desc", limit = tonumber(params.limit) or 50, cursor = params.cursor}
end`,
	},
	searchUpload,
}

// declareFieldIndexes declares the posts' indexes and builds them
// (the build a running instance's leader does in the background, done
// here at once, so that the planner uses them from the first request).
func declareFieldIndexes(ctx context.Context, s storage.Store) error {
	for _, spec := range fieldIndexes {
		if _, _, err := s.DeclareFieldIndex(ctx, spec); err != nil {
			return fmt.Errorf("declare %s %s: %w", spec.Collection, spec.Path, err)
		}
	}
	for {
		p, err := s.BuildFieldIndexes(ctx, 20_000)
		if err != nil {
			return fmt.Errorf("build field indexes: %w", err)
		}
		for _, f := range p.Finished {
			if f.State != storage.FieldIndexReady {
				return fmt.Errorf("field index %s %s: %s %s", f.Collection, f.Path, f.State, f.Error)
			}
		}
		if !p.Pending {
			return nil
		}
	}
}

// queryEqURLs are first pages of the posts in each language, the common
// ones and the rare ones.
func queryEqURLs(_ context.Context, base string, _ *plan) ([]string, error) {
	var out []string
	for _, l := range langs {
		out = append(out, base+"/xrpc/"+methodPostsByLang+"?limit=20&lang="+l.tag)
	}
	return out, nil
}

// sortDeepURLs are pages of 50 posts sorted by createdAt after about 1,000
// of the server's own cursors, spread over the whole listing (walked 100
// at a time, as a client would).
func sortDeepURLs(ctx context.Context, base string, p *plan) ([]string, error) {
	prefix := base + "/xrpc/" + methodPostsByTime + "?"
	stride := max(1, p.posts/100/1000)
	var out []string
	cursor := ""
	for page := 0; ; page++ {
		u := prefix + "limit=100"
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		var body struct {
			Cursor string `json:"cursor"`
		}
		if err := benchkit.GetJSON(ctx, u, &body); err != nil {
			return nil, fmt.Errorf("walk page %d: %w", page, err)
		}
		if body.Cursor == "" {
			break
		}
		cursor = body.Cursor
		if page%stride == 0 {
			out = append(out, prefix+"limit=50&cursor="+url.QueryEscape(cursor))
		}
	}
	rng := rand.New(rand.NewPCG(1, 2)) // the same order on both servers
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out, nil
}
