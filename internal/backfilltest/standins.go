// Package backfilltest holds stand-ins for the network peers a backfill
// talks to, for tests and benchmarks: a PDS (getLatestCommit, listRecords,
// listRepos), a relay (listReposByCollection) and a PLC directory. They run
// on 127.0.0.1, speak the real wire format, and count the requests they get.
//
// In a test, NewPDS, NewRelay and NewPLC stop them when the test ends;
// elsewhere (benchmark programs), StartPDS, StartRelay and StartPLC start
// them and Close stops them.
package backfilltest

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// CID is the record CID the stand-ins answer with.
const CID = "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm"

func xrpcError(w http.ResponseWriter, status int, name, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": name, "message": msg})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

type record struct {
	RKey  string
	Value map[string]any
}

// renderedPage is a listRecords answer and the cursor of the next page
// ("" for the last page).
type renderedPage struct {
	raw  []byte
	next string
}

// PDS serves com.atproto.sync.getLatestCommit, com.atproto.repo.listRecords
// (paged by record key) and com.atproto.sync.listRepos, over repositories
// the test fills (AddRepo) and changes (DeleteRecord); any other method
// answers 501 MethodNotImplemented, as the reference PDS does for
// listReposByCollection. Configure it before requests arrive or through its
// methods; all are safe for concurrent use.
type PDS struct {
	srv *httptest.Server

	mu        sync.Mutex
	repos     map[string]map[string][]record // did → collection → records, by rkey
	inactive  map[string]bool
	revs      map[string]string
	delay     time.Duration   // before every answer
	limitOnce bool            // answer the first listRecords with 429 Retry-After: 1
	failing   map[string]bool // DIDs whose listRecords answer 500
	failLater map[string]bool // DIDs whose listRecords answer 500 after the first page
	noCommit  map[string]bool // DIDs whose getLatestCommit answers 500
	onList    func(did, collection, cursor string)
	filler    string         // appended to every record's text
	fields    map[string]any // added to every record

	pages      map[string]renderedPage // rendered listRecords answers
	firstPages map[string]int          // listRecords without a cursor, per "DID collection"
	listCalls  int
	limited    int

	exports // getRepo (getrepo.go)
}

// NewPDS starts a PDS stand-in for the rest of the test.
func NewPDS(t testing.TB) *PDS {
	p := StartPDS()
	t.Cleanup(p.Close)
	return p
}

// StartPDS starts a PDS stand-in outside a test; stop it with Close.
func StartPDS() *PDS {
	p := &PDS{
		repos: map[string]map[string][]record{}, inactive: map[string]bool{}, revs: map[string]string{},
		failing: map[string]bool{}, failLater: map[string]bool{}, noCommit: map[string]bool{},
		firstPages: map[string]int{}, pages: map[string]renderedPage{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /xrpc/com.atproto.sync.getLatestCommit", p.latestCommit)
	mux.HandleFunc("GET /xrpc/com.atproto.repo.listRecords", p.listRecords)
	mux.HandleFunc("GET /xrpc/com.atproto.sync.listRepos", p.listRepos)
	mux.HandleFunc("GET /xrpc/com.atproto.sync.getRepo", p.getRepo)
	mux.HandleFunc("/xrpc/", func(w http.ResponseWriter, r *http.Request) {
		xrpcError(w, http.StatusNotImplemented, "MethodNotImplemented", "Method Not Implemented")
	})
	p.srv = httptest.NewServer(mux)
	return p
}

// URL is the PDS's base URL (its service endpoint).
func (p *PDS) URL() string { return p.srv.URL }

// Close stops the stand-in (NewPDS does so when the test ends).
func (p *PDS) Close() { p.srv.Close() }

// AddRepo appends n records to did's collection (record keys 3k00000000000,
// 3k00000000001, ...; text "record I of DID", plus the filler and fields
// set) and sets the repository's rev.
func (p *PDS) AddRepo(did, collection string, n int, rev string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.repos[did] == nil {
		p.repos[did] = map[string][]record{}
	}
	recs := p.repos[did][collection]
	next := 0 // after the last key, even when records were deleted
	if len(recs) > 0 {
		fmt.Sscanf(recs[len(recs)-1].RKey, "3k%d", &next)
		next++
	}
	for i := range n {
		value := make(map[string]any, len(p.fields)+2)
		maps.Copy(value, p.fields)
		value["$type"], value["text"] = collection, fmt.Sprintf("record %d of %s", i, did)+p.filler
		recs = append(recs, record{RKey: fmt.Sprintf("3k%011d", next+i), Value: value})
	}
	p.repos[did][collection] = recs
	p.revs[did] = rev
	clear(p.pages)
	clear(p.exports.built)
}

// DeleteRecord removes the record rkey from did's collection, as
// com.atproto.repo.deleteRecord does, and sets the repository's rev (the
// commit that deleted it). It reports whether the record existed.
func (p *PDS) DeleteRecord(did, collection, rkey, rev string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	recs := p.repos[did][collection]
	i := slices.IndexFunc(recs, func(r record) bool { return r.RKey == rkey })
	if i < 0 {
		return false
	}
	p.repos[did][collection] = slices.Delete(recs, i, i+1)
	p.revs[did] = rev
	clear(p.pages)
	clear(p.exports.built)
	return true
}

// OnListRecords calls fn with each listRecords request's repository,
// collection and cursor before it is answered (nil removes it). A test uses
// it to act while a listing is under way, for instance to index a record
// live in the middle of a backfill.
func (p *PDS) OnListRecords(fn func(did, collection, cursor string)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.onList = fn
}

// SetInactive lists did in listRepos as deactivated (active false).
func (p *PDS) SetInactive(did string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inactive[did] = true
}

// SetFailing makes listRecords of did answer 500.
func (p *PDS) SetFailing(did string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failing[did] = true
}

// SetFailingAfterFirstPage makes listRecords of did answer its first page,
// then 500 to every request for a later page: a listing that breaks off
// part-way.
func (p *PDS) SetFailingAfterFirstPage(did string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failLater[did] = true
}

// SetNoLatestCommit makes getLatestCommit of did answer 500, so that the
// repository's revision is unknown to the backfill.
func (p *PDS) SetNoLatestCommit(did string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.noCommit[did] = true
}

// SetDelay makes every answer wait d.
func (p *PDS) SetDelay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
}

// LimitOnce makes the next listRecords answer 429 with Retry-After: 1
// (once only).
func (p *PDS) LimitOnce() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.limitOnce = true
}

// SetFiller appends text to the records AddRepo makes from now on.
func (p *PDS) SetFiller(text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.filler = text
}

// SetFields adds fields (beside $type and text) to the records AddRepo makes
// from now on, for instance those a lexicon requires. The values are shared
// by the records, not copied.
func (p *PDS) SetFields(fields map[string]any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fields = maps.Clone(fields)
}

// Prerender renders every listRecords page of limit records, as a client
// paging from the start gets them, so that answering them later costs the
// stand-in little: benchmarks call it before they measure. (Pages are
// rendered once anyway; AddRepo discards them.)
func (p *PDS) Prerender(limit int) {
	p.mu.Lock()
	var lists [][2]string // DID, collection
	for did, colls := range p.repos {
		for coll := range colls {
			lists = append(lists, [2]string{did, coll})
		}
	}
	p.mu.Unlock()
	for _, l := range lists {
		for cursor := ""; ; {
			if cursor = p.page(l[0], l[1], cursor, limit).next; cursor == "" {
				break
			}
		}
	}
}

// FirstPages counts listRecords requests without a cursor for did's
// collection: how often its listing was started.
func (p *PDS) FirstPages(did, collection string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.firstPages[did+" "+collection]
}

// ListCalls counts every listRecords request.
func (p *PDS) ListCalls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.listCalls
}

// Limited counts the 429 answers given.
func (p *PDS) Limited() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.limited
}

func (p *PDS) wait() {
	p.mu.Lock()
	d := p.delay
	p.mu.Unlock()
	time.Sleep(d)
}

func (p *PDS) latestCommit(w http.ResponseWriter, r *http.Request) {
	p.wait()
	did := r.URL.Query().Get("did")
	p.mu.Lock()
	rev, ok := p.revs[did]
	noCommit := p.noCommit[did]
	p.mu.Unlock()
	if noCommit {
		xrpcError(w, http.StatusInternalServerError, "InternalServerError", "Internal Server Error")
		return
	}
	if !ok {
		xrpcError(w, http.StatusBadRequest, "RepoNotFound", "Could not find repo for DID: "+did)
		return
	}
	writeJSON(w, map[string]string{"cid": CID, "rev": rev})
}

func (p *PDS) listRecords(w http.ResponseWriter, r *http.Request) {
	p.wait()
	q := r.URL.Query()
	did, collection, cursor := q.Get("repo"), q.Get("collection"), q.Get("cursor")
	limit, _ := strconv.Atoi(q.Get("limit"))
	p.mu.Lock()
	p.listCalls++
	if cursor == "" {
		p.firstPages[did+" "+collection]++
	}
	if p.limitOnce && p.limited == 0 {
		p.limited++
		p.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		xrpcError(w, http.StatusTooManyRequests, "RateLimitExceeded", "Rate Limit Exceeded")
		return
	}
	failing := p.failing[did] || p.failLater[did] && cursor != ""
	_, ok := p.repos[did]
	onList := p.onList
	p.mu.Unlock()
	if onList != nil {
		onList(did, collection, cursor)
	}
	switch {
	case failing:
		xrpcError(w, http.StatusInternalServerError, "InternalServerError", "Internal Server Error")
		return
	case !ok:
		xrpcError(w, http.StatusBadRequest, "InvalidRequest", "Could not find repo: "+did)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(p.page(did, collection, cursor, limit).raw)
}

// page is the listRecords answer for did's collection after cursor, with
// at most limit records (1 to 100, else 50). Pages are rendered once: the
// stand-in's cost stays out of benchmarks.
func (p *PDS) page(did, collection, cursor string, limit int) renderedPage {
	if limit < 1 || limit > 100 {
		limit = 50
	}
	key := fmt.Sprint(did, " ", collection, " ", cursor, " ", limit)
	p.mu.Lock()
	if cached, hit := p.pages[key]; hit {
		p.mu.Unlock()
		return cached
	}
	recs := slices.Clone(p.repos[did][collection])
	p.mu.Unlock()
	type out struct {
		URI   string         `json:"uri"`
		CID   string         `json:"cid"`
		Value map[string]any `json:"value"`
	}
	page := []out{}
	next := ""
	for _, rec := range recs {
		if cursor != "" && rec.RKey <= cursor {
			continue
		}
		if len(page) == limit {
			next = page[len(page)-1].URI[strings.LastIndexByte(page[len(page)-1].URI, '/')+1:]
			break
		}
		page = append(page, out{URI: "at://" + did + "/" + collection + "/" + rec.RKey, CID: CID, Value: rec.Value})
	}
	body := map[string]any{"records": page}
	if next != "" {
		body["cursor"] = next
	}
	raw, _ := json.Marshal(body)
	rendered := renderedPage{raw: raw, next: next}
	p.mu.Lock()
	p.pages[key] = rendered
	p.mu.Unlock()
	return rendered
}

func (p *PDS) listRepos(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	var dids []string
	for did := range p.repos {
		dids = append(dids, did)
	}
	for did := range p.inactive {
		if p.repos[did] == nil {
			dids = append(dids, did)
		}
	}
	inactive := p.inactive
	p.mu.Unlock()
	slices.Sort(dids)
	page, next := pageOf(dids, r)
	type repo struct {
		DID    string `json:"did"`
		Head   string `json:"head"`
		Rev    string `json:"rev"`
		Active bool   `json:"active"`
		Status string `json:"status,omitempty"`
	}
	out := []repo{}
	for _, did := range page {
		rp := repo{DID: did, Head: CID, Rev: "3kaaaaaaaaaa2", Active: !inactive[did]}
		if inactive[did] {
			rp.Status = "deactivated"
		}
		out = append(out, rp)
	}
	body := map[string]any{"repos": out}
	if next != "" {
		body["cursor"] = next
	}
	writeJSON(w, body)
}

// pageOf pages sorted keys with the request's cursor (the last key of the
// previous page) and limit.
func pageOf(keys []string, r *http.Request) ([]string, string) {
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	if limit < 1 {
		limit = 500
	}
	cursor := r.URL.Query().Get("cursor")
	var page []string
	for _, k := range keys {
		if cursor != "" && k <= cursor {
			continue
		}
		page = append(page, k)
	}
	if len(page) > limit {
		return page[:limit], page[limit-1]
	}
	return page, ""
}

// Relay serves com.atproto.sync.listReposByCollection from an index.
type Relay struct {
	srv *httptest.Server

	mu      sync.Mutex
	index   map[string][]string // collection → DIDs
	fail    bool                // answer 502 to everything
	calls   int
	cursors []string // cursors received, in order
}

// NewRelay starts a relay stand-in for the rest of the test.
func NewRelay(t testing.TB) *Relay {
	rl := StartRelay()
	t.Cleanup(rl.Close)
	return rl
}

// StartRelay starts a relay stand-in outside a test; stop it with Close.
func StartRelay() *Relay {
	rl := &Relay{index: map[string][]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /xrpc/com.atproto.sync.listReposByCollection", func(w http.ResponseWriter, r *http.Request) {
		rl.mu.Lock()
		rl.calls++
		rl.cursors = append(rl.cursors, r.URL.Query().Get("cursor"))
		fail := rl.fail
		dids := slices.Clone(rl.index[r.URL.Query().Get("collection")])
		rl.mu.Unlock()
		if fail {
			xrpcError(w, http.StatusBadGateway, "UpstreamFailure", "relay down")
			return
		}
		slices.Sort(dids)
		page, next := pageOf(dids, r)
		repos := []map[string]string{}
		for _, did := range page {
			repos = append(repos, map[string]string{"did": did})
		}
		body := map[string]any{"repos": repos}
		if next != "" {
			body["cursor"] = next
		}
		writeJSON(w, body)
	})
	rl.srv = httptest.NewServer(mux)
	return rl
}

// URL is the relay's base URL.
func (rl *Relay) URL() string { return rl.srv.URL }

// Close stops the stand-in (NewRelay does so when the test ends).
func (rl *Relay) Close() { rl.srv.Close() }

// Add indexes dids under collection.
func (rl *Relay) Add(collection string, dids ...string) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	rl.index[collection] = append(rl.index[collection], dids...)
}

// SetFailing makes every answer a 502.
func (rl *Relay) SetFailing() {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	rl.fail = true
}

// Calls reports the requests made and the cursor each carried.
func (rl *Relay) Calls() (int, []string) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return rl.calls, slices.Clone(rl.cursors)
}
