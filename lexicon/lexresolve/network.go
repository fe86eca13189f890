package lexresolve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/bluesky-social/indigo/atproto/identity"

	"github.com/lexview/lexview/lexicon"
)

// Defaults of Options.
const (
	DefaultTTL         = time.Hour
	DefaultNegativeTTL = 30 * time.Second
	DefaultTimeout     = 10 * time.Second
	// maxCached bounds the authority cache; when full, expired entries are
	// dropped, then everything.
	maxCached = 10_000
)

// maxRecordResponse bounds a getRecord answer: the largest lexicon
// document plus the record's envelope (uri, cid) and JSON escaping.
const maxRecordResponse = 2*lexicon.MaxDocumentSize + 64<<10

// Options configure the network resolver.
type Options struct {
	// TXT looks up _lexicon records (NewTXTResolver). Required.
	TXT TXTResolver
	// Directory resolves DIDs. Required.
	Directory identity.Directory
	// HTTP fetches schema records; the guarded client. Required.
	HTTP *http.Client
	// TTL is how long a resolved authority is reused (DefaultTTL);
	// NegativeTTL how long a failed one is (DefaultNegativeTTL).
	TTL, NegativeTTL time.Duration
	// Timeout bounds each step's network calls (DefaultTimeout).
	Timeout time.Duration
	// UserAgent is sent with every HTTP request.
	UserAgent string
	Now       func() time.Time
}

// Network is the Resolver that asks DNS, the DID directory and PDSes.
type Network struct {
	opt Options

	mu    sync.Mutex
	cache map[string]cached // by authority domain
}

type cached struct {
	auth    Authority
	err     error
	expires time.Time
}

// New returns the network resolver.
func New(opt Options) *Network {
	if opt.TTL <= 0 {
		opt.TTL = DefaultTTL
	}
	if opt.NegativeTTL <= 0 {
		opt.NegativeTTL = DefaultNegativeTTL
	}
	if opt.Timeout <= 0 {
		opt.Timeout = DefaultTimeout
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	return &Network{opt: opt, cache: map[string]cached{}}
}

// Authority implements Resolver, cached per authority domain: NSIDs of
// one authority share the entry.
func (n *Network) Authority(ctx context.Context, nsid string) (Authority, error) {
	domain, err := AuthorityDomain(nsid)
	if err != nil {
		return Authority{}, err
	}
	now := n.opt.Now()
	n.mu.Lock()
	c, ok := n.cache[domain]
	n.mu.Unlock()
	if ok && now.Before(c.expires) {
		if c.err != nil {
			return Authority{}, withNSID(c.err, nsid)
		}
		return c.auth, nil
	}
	auth, err := resolveAuthority(ctx, n.opt.TXT, n.opt.Directory, nsid, n.opt.Timeout)
	if ctx.Err() != nil {
		return auth, err // the caller gave up: nothing learnt about the authority
	}
	ttl := n.opt.TTL
	if err != nil {
		ttl = n.opt.NegativeTTL
	}
	n.mu.Lock()
	if len(n.cache) >= maxCached {
		n.evict(now)
	}
	n.cache[domain] = cached{auth: auth, err: err, expires: now.Add(ttl)}
	n.mu.Unlock()
	return auth, err
}

// Forget drops the cached authority of an NSID, so the next resolution
// asks DNS and the directory again.
func (n *Network) Forget(nsid string) {
	if domain, err := AuthorityDomain(nsid); err == nil {
		n.mu.Lock()
		delete(n.cache, domain)
		n.mu.Unlock()
	}
}

// evict drops expired entries, or all when none has expired; n.mu held.
func (n *Network) evict(now time.Time) {
	for k, c := range n.cache {
		if !now.Before(c.expires) {
			delete(n.cache, k)
		}
	}
	if len(n.cache) >= maxCached {
		clear(n.cache)
	}
}

// withNSID re-targets a cached authority error at another NSID of the
// same authority.
func withNSID(err error, nsid string) error {
	if e, ok := AsError(err); ok {
		c := *e
		c.NSID = nsid
		return &c
	}
	return err
}

// Schema implements Resolver: the authority (cached), then the record,
// always fetched afresh.
func (n *Network) Schema(ctx context.Context, nsid string) (Schema, error) {
	auth, err := n.Authority(ctx, nsid)
	if err != nil {
		return Schema{}, err
	}
	pds := auth.PDS()
	if pds == "" {
		return Schema{}, &Error{Step: StepPDS, NSID: nsid, Msg: "the DID document of " + auth.DID + " names no PDS"}
	}
	if u, err := url.Parse(pds); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return Schema{}, &Error{Step: StepPDS, NSID: nsid, Msg: fmt.Sprintf("the PDS endpoint %q of %s is not an http(s) URL", clip(pds), auth.DID)}
	}
	s, err := n.fetch(ctx, nsid, auth)
	if err != nil {
		return Schema{}, err
	}
	return s, nil
}

// recordAnswer is com.atproto.repo.getRecord's output.
type recordAnswer struct {
	URI   string          `json:"uri"`
	CID   string          `json:"cid"`
	Value json.RawMessage `json:"value"`
}

// fetch reads com.atproto.lexicon.schema/<nsid> from the authority's PDS
// and checks it.
func (n *Network) fetch(ctx context.Context, nsid string, auth Authority) (Schema, error) {
	ctx, cancel := context.WithTimeout(ctx, n.opt.Timeout)
	defer cancel()
	q := url.Values{"repo": {auth.DID}, "collection": {SchemaCollection}, "rkey": {nsid}}
	u := strings.TrimRight(auth.PDS(), "/") + "/xrpc/com.atproto.repo.getRecord?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Schema{}, &Error{Step: StepRecord, NSID: nsid, Msg: "bad PDS URL", Err: err}
	}
	req.Header.Set("Accept", "application/json")
	if n.opt.UserAgent != "" {
		req.Header.Set("User-Agent", n.opt.UserAgent)
	}
	resp, err := n.opt.HTTP.Do(req)
	if err != nil {
		return Schema{}, &Error{Step: StepRecord, NSID: nsid, Upstream: true, Msg: "fetching the schema from " + auth.PDS() + " failed", Err: err}
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRecordResponse+1))
	if err != nil {
		return Schema{}, &Error{Step: StepRecord, NSID: nsid, Upstream: true, Msg: "reading the schema from " + auth.PDS() + " failed", Err: err}
	}
	if len(body) > maxRecordResponse {
		return Schema{}, &Error{Step: StepRecord, NSID: nsid, Msg: fmt.Sprintf("the schema record is larger than %d bytes", maxRecordResponse)}
	}
	if resp.StatusCode != http.StatusOK {
		var xe struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(body, &xe)
		if resp.StatusCode == http.StatusBadRequest && xe.Error == "RecordNotFound" || resp.StatusCode == http.StatusNotFound {
			return Schema{}, &Error{Step: StepRecord, NSID: nsid, Missing: true, Msg: fmt.Sprintf("no record %s/%s in the repository of %s", SchemaCollection, nsid, auth.DID)}
		}
		return Schema{}, &Error{Step: StepRecord, NSID: nsid, Upstream: true,
			Msg: fmt.Sprintf("the PDS answered %d %s", resp.StatusCode, clip(xe.Error))}
	}
	var rec recordAnswer
	if err := json.Unmarshal(body, &rec); err != nil || len(rec.Value) == 0 {
		return Schema{}, &Error{Step: StepRecord, NSID: nsid, Upstream: true, Msg: "the PDS answered something that is not a record"}
	}
	doc, err := Document(rec.Value, nsid)
	if err != nil {
		return Schema{}, err
	}
	return Schema{Authority: auth, URI: rec.URI, CID: rec.CID, Document: doc}, nil
}

// Document turns a com.atproto.lexicon.schema record's value into the
// lexicon document it holds (the value without its $type) and checks it:
// a lexicon document (lexicon.Parse) whose id is nsid.
func Document(value json.RawMessage, nsid string) (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	if err := dec.Decode(&fields); err != nil || fields == nil {
		return nil, &Error{Step: StepLexicon, NSID: nsid, Msg: "the schema record is not a JSON object"}
	}
	if t, ok := fields["$type"]; ok && string(t) != `"`+SchemaCollection+`"` {
		return nil, &Error{Step: StepLexicon, NSID: nsid, Msg: "the record's $type is not " + SchemaCollection}
	}
	delete(fields, "$type")
	doc, err := json.Marshal(fields)
	if err != nil {
		return nil, &Error{Step: StepLexicon, NSID: nsid, Msg: "the schema record does not re-encode", Err: err}
	}
	parsed, err := lexicon.Parse(doc)
	if err != nil {
		return nil, &Error{Step: StepLexicon, NSID: nsid, Msg: "not a valid lexicon", Err: err}
	}
	if parsed.ID.String() != nsid {
		return nil, &Error{Step: StepLexicon, NSID: nsid, Msg: fmt.Sprintf("the schema's id %q is not the NSID", clip(parsed.ID.String()))}
	}
	return doc, nil
}
