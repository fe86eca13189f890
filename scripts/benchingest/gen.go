package main

import (
	"crypto/sha256"
	"encoding/base32"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/lexview/lexview/internal/jetstreamtest"
)

// The benchmark's record collections.
const (
	collPost   = "app.bench.post"
	collLike   = "app.bench.like"
	collFollow = "app.bench.follow"
)

var collections = []string{collPost, collLike, collFollow}

// lexiconDocs are the record lexicons registered before ingestion: typed
// strings (datetime, at-uri, cid, did, language, uri), length and grapheme
// limits, a strongRef-like object, optional arrays and optional objects.
var lexiconDocs = []string{
	`{"lexicon":1,"id":"app.bench.post","defs":{
	  "main":{"type":"record","key":"tid","record":{"type":"object","required":["text","createdAt"],"properties":{
	    "text":{"type":"string","maxLength":3000,"maxGraphemes":300},
	    "createdAt":{"type":"string","format":"datetime"},
	    "langs":{"type":"array","maxLength":3,"items":{"type":"string","format":"language"}},
	    "tags":{"type":"array","maxLength":8,"items":{"type":"string","maxLength":640,"maxGraphemes":64}},
	    "reply":{"type":"ref","ref":"#replyRef"},
	    "quote":{"type":"ref","ref":"#strongRef"},
	    "link":{"type":"ref","ref":"#external"}}}},
	  "replyRef":{"type":"object","required":["root","parent"],"properties":{
	    "root":{"type":"ref","ref":"#strongRef"},"parent":{"type":"ref","ref":"#strongRef"}}},
	  "strongRef":{"type":"object","required":["uri","cid"],"properties":{
	    "uri":{"type":"string","format":"at-uri"},"cid":{"type":"string","format":"cid"}}},
	  "external":{"type":"object","required":["uri","title"],"properties":{
	    "uri":{"type":"string","format":"uri"},"title":{"type":"string","maxLength":300},
	    "description":{"type":"string","maxLength":1000}}}}}`,
	`{"lexicon":1,"id":"app.bench.like","defs":{
	  "main":{"type":"record","key":"tid","record":{"type":"object","required":["subject","createdAt"],"properties":{
	    "subject":{"type":"ref","ref":"#strongRef"},
	    "createdAt":{"type":"string","format":"datetime"},
	    "via":{"type":"ref","ref":"#strongRef"}}}},
	  "strongRef":{"type":"object","required":["uri","cid"],"properties":{
	    "uri":{"type":"string","format":"at-uri"},"cid":{"type":"string","format":"cid"}}}}}`,
	`{"lexicon":1,"id":"app.bench.follow","defs":{
	  "main":{"type":"record","key":"tid","record":{"type":"object","required":["subject","createdAt"],"properties":{
	    "subject":{"type":"string","format":"did"},
	    "createdAt":{"type":"string","format":"datetime"},
	    "via":{"type":"ref","ref":"#strongRef"}}}},
	  "strongRef":{"type":"object","required":["uri","cid"],"properties":{
	    "uri":{"type":"string","format":"at-uri"},"cid":{"type":"string","format":"cid"}}}}}`,
}

var (
	b32     = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)
	words   = splitWords("the a of to and in is it you that for on was with as I this at be have from or one had by but not what all were we when your can said there use an each which she do how their if will up other about out many then them these so some her would make like him into time has look two more write go see number no way could people my than first water been call who oil its now find long down day did get come made may part just today week new post thread café naïve über déjà vu 🙂 🎉 日本語 ok lol atproto bluesky lexicon appview feed rust golang sqlite postgres")
	langs   = []string{"en", "en", "en", "ja", "pt", "de", "es", "fr"}
	domains = []string{"example.com", "news.example.org", "blog.example.net", "video.example.io"}
)

func splitWords(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ' ' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}

// ref is a record that exists (or existed) in the generated stream.
type ref struct {
	did  int32
	coll uint8
	rkey uint64 // TID value
}

// generator produces a Jetstream commit stream: mostly creates, ~5%
// updates and ~3% deletes of live records, over a population of DIDs.
type generator struct {
	pcg     *rand.PCG // rng's source, copied by clone
	rng     *rand.Rand
	dids    []string
	live    []ref // records currently existing, for updates and deletes
	posts   []ref // recent posts, for replies, quotes and likes (ring)
	clock   int64 // TID microseconds, advancing per event
	buf     []byte
	creates int
	deletes int
	updates int
	recSize int64 // bytes of record JSON generated
	recN    int64
}

func newGenerator(seed uint64, nDIDs int) *generator {
	pcg := rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)
	g := &generator{pcg: pcg, rng: rand.New(pcg), clock: time.Now().Add(-30 * 24 * time.Hour).UnixMicro()}
	g.dids = make([]string, nDIDs)
	for i := range g.dids {
		var b [15]byte
		for j := range b {
			b[j] = byte(g.rng.Uint32())
		}
		g.dids[i] = "did:plc:" + b32.EncodeToString(b[:]) // 24 characters
	}
	return g
}

// liveCount is the number of records the stream leaves in the index.
func (g *generator) liveCount() int { return g.creates - g.deletes }

// generate appends n events to out, each as Jetstream JSON without time_us.
// The bodies are packed into large shared buffers (few, pointer-free
// allocations: cheap for the garbage collector).
func (g *generator) generate(n int, out []jetstreamtest.Event) []jetstreamtest.Event {
	const chunk = 32 << 20
	var arena []byte
	for range n {
		arena, out = g.appendEvent(arena, out, chunk)
	}
	return out
}

// appendEvent generates the next event, appends its body to arena (to a
// new one of at least grow bytes when arena is full: the events before
// keep the old one) and the event to out.
func (g *generator) appendEvent(arena []byte, out []jetstreamtest.Event, grow int) ([]byte, []jetstreamtest.Event) {
	coll := g.event()
	if len(arena)+len(g.buf) > cap(arena) {
		arena = make([]byte, 0, max(grow, len(g.buf)))
	}
	start := len(arena)
	arena = append(arena, g.buf...)
	return arena, append(out, jetstreamtest.Event{Collection: collections[coll], JSON: arena[start:len(arena):len(arena)]})
}

// clone returns a generator that continues the stream exactly as g would,
// without advancing g.
func (g *generator) clone() *generator {
	c := *g
	pcg := *g.pcg
	c.pcg = &pcg
	c.rng = rand.New(c.pcg)
	c.live = slices.Clone(g.live)
	c.posts = slices.Clone(g.posts)
	c.buf = nil
	return &c
}

// stream continues a generator's stream as it is read, for a phase whose
// length is not known in advance (the index build phase). The events take
// returns are valid until the next take (PublishRaw copies them).
type stream struct {
	g      *generator
	events []jetstreamtest.Event
	arena  []byte
}

// take generates the next n events.
func (s *stream) take(n int) []jetstreamtest.Event {
	s.events, s.arena = s.events[:0], s.arena[:0]
	for range n {
		s.arena, s.events = s.g.appendEvent(s.arena, s.events, 64<<10)
	}
	return s.events
}

// event encodes the next event into g.buf and returns its collection.
func (g *generator) event() uint8 {
	g.clock += 500 + g.rng.Int64N(1000)
	rev := tid(g.clock, 7)
	p := g.rng.IntN(100)
	switch {
	case p < 3 && len(g.live) > 1000:
		i := g.rng.IntN(len(g.live))
		r := g.live[i]
		g.live[i] = g.live[len(g.live)-1]
		g.live = g.live[:len(g.live)-1]
		g.deletes++
		g.envelope(r, "delete", rev)
		g.buf = append(g.buf, "}}"...)
		return r.coll
	case p < 8 && len(g.live) > 1000:
		r := g.live[g.rng.IntN(len(g.live))]
		g.updates++
		return g.write(r, "update", rev)
	}
	var r ref
	// A mildly skewed population: low-numbered DIDs are more active.
	f := g.rng.Float64()
	r.did = int32(f * f * float64(len(g.dids)))
	switch c := g.rng.IntN(100); {
	case c < 60:
		r.coll = 0
	case c < 88:
		r.coll = 1
	default:
		r.coll = 2
	}
	r.rkey = uint64(g.clock-g.rng.Int64N(400))<<10 | uint64(g.rng.IntN(1024))
	g.live = append(g.live, r)
	if r.coll == 0 {
		if len(g.posts) < 50_000 {
			g.posts = append(g.posts, r)
		} else {
			g.posts[g.rng.IntN(len(g.posts))] = r
		}
	}
	g.creates++
	return g.write(r, "create", rev)
}

func (g *generator) envelope(r ref, op, rev string) {
	b := append(g.buf[:0], `{"did":"`...)
	b = append(b, g.dids[r.did]...)
	b = append(b, `","kind":"commit","commit":{"rev":"`...)
	b = append(b, rev...)
	b = append(b, `","operation":"`...)
	b = append(b, op...)
	b = append(b, `","collection":"`...)
	b = append(b, collections[r.coll]...)
	b = append(b, `","rkey":"`...)
	b = appendTID(b, r.rkey)
	g.buf = append(b, '"')
}

// write encodes a create or update with a fresh record body.
func (g *generator) write(r ref, op, rev string) uint8 {
	g.envelope(r, op, rev)
	b := append(g.buf, `,"record":`...)
	recStart := len(b)
	b = g.record(b, r.coll)
	g.recSize += int64(len(b) - recStart)
	g.recN++
	sum := sha256.Sum256(b[recStart:])
	b = append(b, `,"cid":"`...)
	b = appendCID(b, sum)
	g.buf = append(b, `"}}`...)
	return r.coll
}

func (g *generator) record(b []byte, coll uint8) []byte {
	b = append(b, `{"$type":"`...)
	b = append(b, collections[coll]...)
	b = append(b, `","createdAt":"`...)
	b = time.UnixMicro(g.clock).UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z")
	b = append(b, '"')
	switch coll {
	case 0:
		b = append(b, `,"text":"`...)
		b = g.text(b, 200+g.rng.IntN(100)) // at most 299 bytes: within maxGraphemes 300
		b = append(b, '"')
		if g.rng.IntN(10) < 9 {
			b = append(b, `,"langs":["`...)
			b = append(b, langs[g.rng.IntN(len(langs))]...)
			b = append(b, `"]`...)
		}
		if g.rng.IntN(5) == 0 {
			b = append(b, `,"tags":["`...)
			b = append(b, words[g.rng.IntN(len(words))]...)
			b = append(b, `","`...)
			b = append(b, words[g.rng.IntN(len(words))]...)
			b = append(b, `"]`...)
		}
		if g.rng.IntN(2) == 0 {
			b = append(b, `,"reply":{"root":`...)
			b = g.strongRef(b)
			b = append(b, `,"parent":`...)
			b = g.strongRef(b)
			b = append(b, '}')
		}
		if g.rng.IntN(20) < 3 {
			b = append(b, `,"quote":`...)
			b = g.strongRef(b)
		}
		if g.rng.IntN(10) < 4 {
			b = append(b, `,"link":{"uri":"https://`...)
			b = append(b, domains[g.rng.IntN(len(domains))]...)
			b = append(b, "/articles/"...)
			b = strconv.AppendUint(b, g.rng.Uint64N(1e9), 10)
			b = append(b, `","title":"`...)
			b = g.text(b, 40+g.rng.IntN(40))
			b = append(b, `","description":"`...)
			b = g.text(b, 80+g.rng.IntN(200))
			b = append(b, `"}`...)
		}
	case 1:
		b = append(b, `,"subject":`...)
		b = g.strongRef(b)
		if g.rng.IntN(2) == 0 {
			b = append(b, `,"via":`...)
			b = g.strongRef(b)
		}
	case 2:
		b = append(b, `,"subject":"`...)
		b = append(b, g.dids[g.rng.IntN(len(g.dids))]...)
		b = append(b, '"')
		if g.rng.IntN(5) == 0 {
			b = append(b, `,"via":`...)
			b = g.strongRef(b)
		}
	}
	return append(b, '}')
}

// strongRef appends {"uri","cid"} pointing at a generated post.
func (g *generator) strongRef(b []byte) []byte {
	r := ref{did: int32(g.rng.IntN(len(g.dids))), rkey: uint64(g.clock) << 10}
	if len(g.posts) > 0 {
		r = g.posts[g.rng.IntN(len(g.posts))]
	}
	b = append(b, `{"uri":"at://`...)
	b = append(b, g.dids[r.did]...)
	b = append(b, "/app.bench.post/"...)
	b = appendTID(b, r.rkey)
	b = append(b, `","cid":"`...)
	var sum [32]byte
	for i := range 4 {
		v := g.rng.Uint64()
		for j := range 8 {
			sum[i*8+j] = byte(v >> (8 * j))
		}
	}
	b = appendCID(b, sum)
	return append(b, `"}`...)
}

// text appends words (JSON-safe, some non-ASCII) up to n bytes.
func (g *generator) text(b []byte, n int) []byte {
	start := len(b)
	for {
		w := words[g.rng.IntN(len(words))]
		if len(b) > start && len(b)-start+1+len(w) > n {
			return b
		}
		if len(b) > start {
			b = append(b, ' ')
		}
		b = append(b, w...)
	}
}

// tid renders a TID: 53 bits of microseconds, 10 bits of clock id.
func tid(us int64, clockID int) string {
	return string(appendTID(nil, uint64(us)<<10|uint64(clockID)))
}

func appendTID(b []byte, v uint64) []byte {
	const alphabet = "234567abcdefghijklmnopqrstuvwxyz"
	var out [13]byte
	v &= 1<<63 - 1
	for i := 12; i >= 0; i-- {
		out[i] = alphabet[v&31]
		v >>= 5
	}
	return append(b, out[:]...)
}

// appendCID appends a CIDv1 (dag-cbor, sha2-256) in base32: "bafyrei...".
func appendCID(b []byte, digest [32]byte) []byte {
	raw := append([]byte{0x01, 0x71, 0x12, 0x20}, digest[:]...)
	b = append(b, 'b')
	return b32.AppendEncode(b, raw)
}
