package main

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lexview/lexview/storage"
)

// The dataset's collections and the link sources the kinds query, in
// Constellation's collection:path notation.
const (
	collPost   = "app.bench.feed.post"
	collLike   = "app.bench.feed.like"
	collFollow = "app.bench.graph.follow"

	sourceLike   = collLike + ":subject.uri"
	sourceFollow = collFollow + ":subject"
	sourceReply  = collPost + ":reply.parent.uri"
)

// spec says what the generated dataset holds. The same spec always gives
// the same records, byte for byte.
type spec struct {
	seed     uint64
	likes    int     // like records, whose subjects follow a Zipf distribution over subjects posts
	posts    int     // posts with text; about 30% are replies to earlier posts
	follows  int     // follow records, whose subjects (DIDs) follow a Zipf distribution over the accounts
	subjects int     // the posts that likes point at (at most posts)
	accounts int     // accounts writing the records (mildly skewed: low numbers write more)
	zipf     float64 // the Zipf exponent s of both distributions: rank k is chosen with probability ∝ (k+1)^-s
}

// replyShare is the share of posts (in thousandths) that reply to an
// earlier post.
const replyShare = 300

// datasetEpoch and datasetSpan place the records in time: record j of a
// collection of n is created at datasetEpoch + datasetSpan·j/n, so that
// the collections interleave evenly and each one's times strictly
// increase.
var (
	datasetEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	datasetSpan  = 30 * 24 * time.Hour
)

// langs is the distribution of a post's language (langs[0]), in
// thousandths: common ones and a few rare ones, so that an equality filter
// on it finds from a few hundred records to half of them.
var langs = []struct {
	tag   string
	share int
}{{"en", 500}, {"ja", 200}, {"pt", 100}, {"de", 80}, {"es", 60}, {"fr", 50}, {"ko", 5}, {"is", 3}, {"eo", 2}}

var words = []string{"the", "a", "of", "to", "and", "in", "is", "it", "you", "that", "for", "on", "was", "with",
	"as", "this", "at", "be", "have", "from", "or", "one", "had", "by", "but", "not", "what", "all", "were", "we",
	"when", "your", "can", "said", "there", "use", "each", "which", "how", "their", "if", "will", "up", "other",
	"about", "out", "many", "then", "them", "these", "so", "some", "would", "make", "like", "into", "time", "look",
	"more", "write", "see", "number", "way", "could", "people", "than", "first", "water", "been", "call", "who",
	"now", "find", "long", "down", "day", "did", "get", "come", "made", "may", "part", "today", "week", "new",
	"post", "thread", "garden", "trail", "meetup", "café", "naïve", "über", "déjà", "vu", "日本語", "atproto",
	"bluesky", "lexicon", "appview", "feed", "sqlite", "postgres", "index", "query", "backlinks", "search"}

var lowerBase32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// dataset generates the records of a spec. Everything but the Zipf draws
// is a function of the seed and the record's collection and number (see
// hash), so any record's URI is known without generating the others.
type dataset struct {
	spec
	dids []string
	// likeCounts[k] and followCounts[k] are the likes of the subject of
	// rank k and the followers of the account of rank k, filled by
	// generate.
	likeCounts, followCounts []int
	// rootOf[p] is the thread root of post p (p itself when it is not a
	// reply), filled by generate.
	rootOf []int32
}

func newDataset(s spec) *dataset {
	d := &dataset{spec: s, dids: make([]string, s.accounts)}
	for i := range d.dids {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], d.hash(0, uint64(i), 0))
		sum := sha256.Sum256(b[:])
		d.dids[i] = "did:plc:" + lowerBase32.EncodeToString(sum[:])[:24]
	}
	return d
}

// hash is a deterministic 64-bit value of the seed, a collection number, a
// record number and a field number (SplitMix64's finalizer).
func (d *dataset) hash(coll, j, field uint64) uint64 {
	x := d.seed ^ coll<<56 ^ field<<48 ^ j*0x9e3779b97f4a7c15
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// unit is hash as a float in [0, 1).
func (d *dataset) unit(coll, j, field uint64) float64 {
	return float64(d.hash(coll, j, field)>>11) / (1 << 53)
}

// Collection numbers in hash.
const (
	cPost = iota + 1
	cLike
	cFollow
)

var collNames = [...]string{cPost: collPost, cLike: collLike, cFollow: collFollow}

// count returns the records of collection c.
func (d *dataset) count(c int) int {
	switch c {
	case cPost:
		return d.posts
	case cLike:
		return d.likes
	}
	return d.follows
}

// at is the creation time of record j of collection c.
func (d *dataset) at(c, j int) time.Time {
	step := datasetSpan.Microseconds() / int64(max(d.count(c), 1))
	return datasetEpoch.Add(time.Duration(int64(j)*step+int64(c)) * time.Microsecond)
}

// author is the account writing record j of collection c: low-numbered
// accounts write more.
func (d *dataset) author(c, j int) string {
	f := d.unit(uint64(c), uint64(j), 1)
	return d.dids[int(f*f*float64(len(d.dids)))]
}

// rkey is record j of collection c's key: a TID of its time.
func (d *dataset) rkey(c, j int) string {
	return string(appendTID(make([]byte, 0, 13), d.at(c, j).UnixMicro(), uint64(c)))
}

// uri is record j of collection c's AT URI.
func (d *dataset) uri(c, j int) string {
	return "at://" + d.author(c, j) + "/" + collNames[c] + "/" + d.rkey(c, j)
}

// cid is record j of collection c's CID (a stand-in: a hash of its
// identity, shaped as a dag-cbor sha2-256 CIDv1).
func (d *dataset) cid(c, j int) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(c))
	binary.BigEndian.PutUint64(b[8:], d.hash(uint64(c), uint64(j), 2))
	sum := sha256.Sum256(b[:])
	return "bafyrei" + lowerBase32.EncodeToString(sum[:])[:52]
}

// subjectPost is the post of like-subject rank k.
func (d *dataset) subjectPost(k int) int { return d.spread(k, d.posts) }

// followedAccount is the account of follow-subject rank k.
func (d *dataset) followedAccount(k int) string { return d.dids[d.spread(k, len(d.dids))] }

// spread maps rank k to one of n items by a fixed permutation: an affine
// map modulo n with a multiplier prime to n, so that popular ranks are
// scattered over the items.
func (d *dataset) spread(k, n int) int {
	a := uint64(1_000_003)
	for gcd(a, uint64(n)) != 1 {
		a += 2
	}
	return int((uint64(k)*a + d.seed%uint64(n)) % uint64(n))
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// generate calls emit with every record, collections interleaved in
// creation order, and fills the counts and thread roots.
func (d *dataset) generate(emit func(storage.Record) error) error {
	rng := rand.New(rand.NewPCG(d.seed, 0x6c657876))
	likeZipf := rand.NewZipf(rng, d.zipf, 1, uint64(d.subjects-1))
	followZipf := rand.NewZipf(rng, d.zipf, 1, uint64(d.accounts-1))
	d.likeCounts, d.followCounts = make([]int, d.subjects), make([]int, d.accounts)
	d.rootOf = make([]int32, d.posts)
	var next [4]int
	buf := make([]byte, 0, 1024)
	for {
		// The collection whose next record is the oldest.
		c := 0
		for _, cc := range []int{cPost, cLike, cFollow} {
			if next[cc] < d.count(cc) && (c == 0 || d.at(cc, next[cc]).Before(d.at(c, next[c]))) {
				c = cc
			}
		}
		if c == 0 {
			return nil
		}
		j := next[c]
		next[c]++
		buf = d.value(buf[:0], c, j, likeZipf, followZipf)
		at := d.at(c, j)
		r := storage.Record{
			URI: d.uri(c, j), DID: d.author(c, j), Collection: collNames[c], RKey: d.rkey(c, j), CID: d.cid(c, j),
			Rev: string(appendTID(make([]byte, 0, 13), at.UnixMicro(), 1000)), Value: append([]byte(nil), buf...),
			IndexedAt: at.Add(time.Second),
		}
		if err := emit(r); err != nil {
			return err
		}
	}
}

// value appends record j of collection c's JSON.
func (d *dataset) value(b []byte, c, j int, likeZipf, followZipf *rand.Zipf) []byte {
	b = append(b, `{"$type":"`...)
	b = append(b, collNames[c]...)
	b = append(b, `","createdAt":"`...)
	b = d.at(c, j).AppendFormat(b, "2006-01-02T15:04:05.000000Z")
	b = append(b, '"')
	switch c {
	case cPost:
		b = append(b, `,"langs":["`...)
		b = append(b, d.lang(j)...)
		b = append(b, `"]`...)
		d.rootOf[j] = int32(j)
		if j > 0 && d.hash(cPost, uint64(j), 3)%1000 < replyShare {
			// A reply to one of the last 5,000 posts.
			parent := j - 1 - int(d.hash(cPost, uint64(j), 4)%uint64(min(j, 5000)))
			root := int(d.rootOf[parent])
			d.rootOf[j] = int32(root)
			b = append(b, `,"reply":{"parent":`...)
			b = d.strongRef(b, cPost, parent)
			b = append(b, `,"root":`...)
			b = d.strongRef(b, cPost, root)
			b = append(b, '}')
		}
		b = append(b, `,"text":"`...)
		b = d.postText(b, j)
		b = append(b, '"')
	case cLike:
		k := int(likeZipf.Uint64())
		d.likeCounts[k]++
		b = append(b, `,"subject":`...)
		b = d.strongRef(b, cPost, d.subjectPost(k))
	case cFollow:
		k := int(followZipf.Uint64())
		d.followCounts[k]++
		b = append(b, `,"subject":"`...)
		b = append(b, d.followedAccount(k)...)
		b = append(b, '"')
	}
	return append(b, '}')
}

// lang is post j's language.
func (d *dataset) lang(j int) string {
	v := int(d.hash(cPost, uint64(j), 6) % 1000)
	for _, l := range langs {
		if v < l.share {
			return l.tag
		}
		v -= l.share
	}
	return langs[0].tag
}

// strongRef appends {"cid":…,"uri":…} of record j of collection c.
func (d *dataset) strongRef(b []byte, c, j int) []byte {
	b = append(b, `{"cid":"`...)
	b = append(b, d.cid(c, j)...)
	b = append(b, `","uri":"`...)
	b = append(b, d.uri(c, j)...)
	return append(b, `"}`...)
}

// postText appends post j's text: 60 to 299 bytes of words.
func (d *dataset) postText(b []byte, j int) []byte {
	return d.text(b, j, 60+int(d.hash(cPost, uint64(j), 5)%240))
}

// text appends words (JSON-safe, some non-ASCII) up to n bytes, each
// drawn uniformly from words.
func (d *dataset) text(b []byte, j, n int) []byte {
	start := len(b)
	for w := uint64(0); ; w++ {
		word := words[d.hash(cPost, uint64(j), 16+w)%uint64(len(words))]
		if len(b) > start && len(b)-start+1+len(word) > n {
			return b
		}
		if len(b) > start {
			b = append(b, ' ')
		}
		b = append(b, word...)
	}
}

const tidAlphabet = "234567abcdefghijklmnopqrstuvwxyz"

// appendTID appends a 13-character TID of micros and clock.
func appendTID(buf []byte, micros int64, clock uint64) []byte {
	v := uint64(micros)<<10 | clock&0x3ff
	var out [13]byte
	for k := 12; k >= 0; k-- {
		out[k] = tidAlphabet[v&31]
		v >>= 5
	}
	return append(buf, out[:]...)
}

// String is a one-line summary of the spec.
func (s spec) String() string {
	return fmt.Sprintf("%d likes (Zipf s=%g over %d posts), %d posts (%d%% replies), %d follows (Zipf over %d accounts), seed %d",
		s.likes, s.zipf, s.subjects, s.posts, replyShare/10, s.follows, s.accounts, s.seed)
}
