package lexresolve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/internal/dnstest"
	"github.com/lexview/lexview/internal/netguard"
	"github.com/lexview/lexview/lexicon/lexresolve"
)

const authorDID = "did:plc:authorauthorauthorauthor"

// pds is a stand-in PDS serving getRecord from a map of rkey → value.
type pds struct {
	srv     *httptest.Server
	records map[string]any
	status  int
	delay   time.Duration
	calls   atomic.Int64
}

func newPDS(t *testing.T) *pds {
	p := &pds{records: map[string]any{}}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.calls.Add(1)
		if p.delay > 0 {
			time.Sleep(p.delay)
		}
		q := r.URL.Query()
		if r.URL.Path != "/xrpc/com.atproto.repo.getRecord" || q.Get("repo") != authorDID || q.Get("collection") != lexresolve.SchemaCollection {
			http.Error(w, `{"error":"InvalidRequest"}`, 400)
			return
		}
		if p.status != 0 {
			w.WriteHeader(p.status)
			return
		}
		v, ok := p.records[q.Get("rkey")]
		if !ok {
			w.WriteHeader(400)
			_, _ = w.Write([]byte(`{"error":"RecordNotFound","message":"Could not locate record"}`))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"uri": "at://" + authorDID + "/" + lexresolve.SchemaCollection + "/" + q.Get("rkey"), "cid": "bafyfake", "value": v})
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func schema(id string) map[string]any {
	return map[string]any{"$type": lexresolve.SchemaCollection, "lexicon": 1, "id": id, "defs": map[string]any{
		"main": map[string]any{"type": "record", "key": "tid", "record": map[string]any{"type": "object", "properties": map[string]any{
			"text": map[string]any{"type": "string"},
		}}},
	}}
}

type fixture struct {
	dns *dnstest.Server
	pds *pds
	dir *identity.MockDirectory
	res *lexresolve.Network
	now time.Time
}

func newFixture(t *testing.T, allowPrivate bool) *fixture {
	f := &fixture{dns: dnstest.Start(t), pds: newPDS(t), dir: identity.NewMockDirectory(), now: time.Now()}
	f.dir.Insert(identity.Identity{DID: syntax.DID(authorDID), Services: map[string]identity.ServiceEndpoint{
		"atproto_pds": {Type: "AtprotoPersonalDataServer", URL: f.pds.srv.URL},
	}})
	f.res = lexresolve.New(lexresolve.Options{
		TXT: lexresolve.NewTXTResolver(f.dns.Addr), Directory: f.dir,
		HTTP:    netguard.NewClient(netguard.Options{AllowPrivate: allowPrivate}, 5*time.Second),
		Timeout: 500 * time.Millisecond, Now: func() time.Time { return f.now },
	})
	return f
}

func stepOf(t *testing.T, err error) lexresolve.Step {
	t.Helper()
	e, ok := lexresolve.AsError(err)
	if !ok {
		t.Fatalf("error %v is not a resolution error", err)
	}
	return e.Step
}

func TestSchemaResolves(t *testing.T) {
	f := newFixture(t, true)
	f.dns.SetTXT("_lexicon.feed.example.com", "did="+authorDID)
	f.pds.records["com.example.feed.post"] = schema("com.example.feed.post")
	s, err := f.res.Schema(context.Background(), "com.example.feed.post")
	if err != nil {
		t.Fatal(err)
	}
	if s.Authority.DID != authorDID || s.Authority.Domain != "feed.example.com" || s.CID != "bafyfake" || s.Authority.PDS() != f.pds.srv.URL {
		t.Fatalf("resolved %+v", s)
	}
	var doc map[string]any
	if err := json.Unmarshal(s.Document, &doc); err != nil || doc["id"] != "com.example.feed.post" || doc["$type"] != nil {
		t.Fatalf("document %s", s.Document)
	}
}

func TestAuthorityCached(t *testing.T) {
	f := newFixture(t, true)
	f.dns.SetTXT("_lexicon.feed.example.com", "did="+authorDID)
	ctx := context.Background()
	for _, nsid := range []string{"com.example.feed.post", "com.example.feed.like", "com.example.feed.post"} {
		if _, err := f.res.Authority(ctx, nsid); err != nil {
			t.Fatal(err)
		}
	}
	if q := f.dns.Queries(); q != 1 {
		t.Fatalf("%d DNS queries for one authority, want 1 (cached)", q)
	}
	f.now = f.now.Add(lexresolve.DefaultTTL + time.Second)
	if _, err := f.res.Authority(ctx, "com.example.feed.post"); err != nil || f.dns.Queries() != 2 {
		t.Fatalf("after the TTL: err %v, %d queries", err, f.dns.Queries())
	}

	// Failures are cached briefly.
	if _, err := f.res.Authority(ctx, "org.missing.thing"); stepOf(t, err) != lexresolve.StepDNS {
		t.Fatalf("missing: %v", err)
	}
	_, err := f.res.Authority(ctx, "org.missing.other")
	if q := f.dns.Queries(); q != 3 || stepOf(t, err) != lexresolve.StepDNS || !strings.Contains(err.Error(), "org.missing.other") {
		t.Fatalf("negative cache: %d queries, %v", q, err)
	}
	f.dns.SetTXT("_lexicon.missing.org", "did="+authorDID)
	f.now = f.now.Add(lexresolve.DefaultNegativeTTL + time.Second)
	if _, err := f.res.Authority(ctx, "org.missing.thing"); err != nil {
		t.Fatalf("after the negative TTL: %v", err)
	}
	f.res.Forget("org.missing.thing")
	if _, err := f.res.Authority(ctx, "org.missing.thing"); err != nil || f.dns.Queries() != 5 {
		t.Fatalf("after Forget: %v, %d queries", err, f.dns.Queries())
	}
}

// TestFailuresNameTheirStep feeds every step bad input: each failure is a
// resolution error naming its step, definitive or upstream as fits.
func TestFailuresNameTheirStep(t *testing.T) {
	f := newFixture(t, true)
	ctx := context.Background()
	tooBig := schema("com.big.thing.huge")
	tooBig["description"] = strings.Repeat("x", 3<<20)
	cases := []struct {
		name, nsid string
		txt        []string
		record     any
		step       lexresolve.Step
		upstream   bool
		msg        string
	}{
		{"malformed NSID", "not an nsid", nil, nil, lexresolve.StepNSID, false, "not a valid NSID"},
		{"one segment short", "com.example", nil, nil, lexresolve.StepNSID, false, "not a valid NSID"},
		{"no TXT record", "com.nothing.here.x", nil, nil, lexresolve.StepDNS, false, "no TXT record"},
		{"junk TXT", "com.junk.a.x", []string{"v=spf1 -all", "hello"}, nil, lexresolve.StepDNS, false, "no did= entry"},
		{"several DIDs", "com.several.a.x", []string{"did=did:plc:aaaaaaaaaaaaaaaaaaaaaaaa", "did=did:plc:bbbbbbbbbbbbbbbbbbbbbbbb"}, nil, lexresolve.StepDNS, false, "2 different did="},
		{"not a DID", "com.notdid.a.x", []string{"did=nonsense"}, nil, lexresolve.StepDNS, false, "is not a DID"},
		{"unknown DID", "com.unknown.a.x", []string{"did=did:plc:cccccccccccccccccccccccc"}, nil, lexresolve.StepDID, false, "does not resolve"},
		{"no record", "com.norecord.a.x", []string{"did=" + authorDID}, nil, lexresolve.StepRecord, false, "no record"},
		{"not a lexicon", "com.notlex.a.x", []string{"did=" + authorDID}, map[string]any{"$type": lexresolve.SchemaCollection, "hello": 1}, lexresolve.StepLexicon, false, "not a valid lexicon"},
		{"id differs", "com.other.a.x", []string{"did=" + authorDID}, schema("com.other.a.y"), lexresolve.StepLexicon, false, "is not the NSID"},
		{"giant schema", "com.big.thing.huge", []string{"did=" + authorDID}, tooBig, lexresolve.StepRecord, false, "larger than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.txt != nil {
				d, _ := lexresolve.AuthorityDomain(c.nsid)
				f.dns.SetTXT("_lexicon."+d, c.txt...)
			}
			if c.record != nil {
				f.pds.records[c.nsid] = c.record
			}
			_, err := f.res.Schema(ctx, c.nsid)
			e, ok := lexresolve.AsError(err)
			if !ok || e.Step != c.step || e.Upstream != c.upstream || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("error %v (%+v), want step %s upstream %v containing %q", err, e, c.step, c.upstream, c.msg)
			}
		})
	}
}

func TestUpstreamFailures(t *testing.T) {
	ctx := context.Background()
	t.Run("DNS server failing", func(t *testing.T) {
		f := newFixture(t, true)
		f.dns.SetFailing(true)
		_, err := f.res.Schema(ctx, "com.example.feed.post")
		if e, ok := lexresolve.AsError(err); !ok || e.Step != lexresolve.StepDNS || !e.Upstream {
			t.Fatalf("%v", err)
		}
	})
	t.Run("slow DNS", func(t *testing.T) {
		f := newFixture(t, true)
		f.dns.SetTXT("_lexicon.feed.example.com", "did="+authorDID)
		f.dns.SetDelay(2 * time.Second)
		start := time.Now()
		_, err := f.res.Schema(ctx, "com.example.feed.post")
		if e, ok := lexresolve.AsError(err); !ok || e.Step != lexresolve.StepDNS || !e.Upstream || time.Since(start) > 1500*time.Millisecond {
			t.Fatalf("%v after %s", err, time.Since(start))
		}
	})
	t.Run("slow PDS", func(t *testing.T) {
		f := newFixture(t, true)
		f.dns.SetTXT("_lexicon.feed.example.com", "did="+authorDID)
		f.pds.records["com.example.feed.post"] = schema("com.example.feed.post")
		f.pds.delay = 2 * time.Second
		start := time.Now()
		_, err := f.res.Schema(ctx, "com.example.feed.post")
		if e, ok := lexresolve.AsError(err); !ok || e.Step != lexresolve.StepRecord || !e.Upstream || time.Since(start) > 1500*time.Millisecond {
			t.Fatalf("%v after %s", err, time.Since(start))
		}
	})
	t.Run("PDS error", func(t *testing.T) {
		f := newFixture(t, true)
		f.dns.SetTXT("_lexicon.feed.example.com", "did="+authorDID)
		f.pds.status = 503
		_, err := f.res.Schema(ctx, "com.example.feed.post")
		if e, ok := lexresolve.AsError(err); !ok || e.Step != lexresolve.StepRecord || !e.Upstream || !strings.Contains(err.Error(), "503") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("PDS on a private address", func(t *testing.T) {
		f := newFixture(t, false)
		f.dns.SetTXT("_lexicon.feed.example.com", "did="+authorDID)
		f.pds.records["com.example.feed.post"] = schema("com.example.feed.post")
		_, err := f.res.Schema(ctx, "com.example.feed.post")
		if e, ok := lexresolve.AsError(err); !ok || e.Step != lexresolve.StepRecord || !strings.Contains(err.Error(), "not public") || f.pds.calls.Load() != 0 {
			t.Fatalf("%v (%d calls reached the PDS)", err, f.pds.calls.Load())
		}
	})
	t.Run("no PDS", func(t *testing.T) {
		f := newFixture(t, true)
		f.dir.Insert(identity.Identity{DID: "did:plc:dddddddddddddddddddddddd"})
		f.dns.SetTXT("_lexicon.feed.example.com", "did=did:plc:dddddddddddddddddddddddd")
		_, err := f.res.Schema(ctx, "com.example.feed.post")
		if stepOf(t, err) != lexresolve.StepPDS {
			t.Fatalf("%v", err)
		}
	})
}
