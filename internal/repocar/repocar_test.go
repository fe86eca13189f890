package repocar_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/bluesky-social/indigo/atproto/atcrypto"
	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/internal/repocar"
	"github.com/lexview/lexview/internal/repocar/repocartest"
)

const alice = syntax.DID("did:plc:alice0000000000000000000")

// keyDir is a directory with a cache: it answers the cached key until
// purged, then the current one.
type keyDir struct {
	mu              sync.Mutex
	cached, current atcrypto.PublicKey
	purges          int
}

func (d *keyDir) ident(k atcrypto.PublicKey) *identity.Identity {
	return &identity.Identity{DID: alice, Keys: map[string]identity.VerificationMethod{
		"atproto": {Type: "Multikey", PublicKeyMultibase: k.Multibase()},
	}}
}

func (d *keyDir) LookupDID(_ context.Context, did syntax.DID) (*identity.Identity, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if did != alice {
		return nil, identity.ErrDIDNotFound
	}
	return d.ident(d.cached), nil
}
func (d *keyDir) LookupHandle(context.Context, syntax.Handle) (*identity.Identity, error) {
	return nil, identity.ErrHandleNotFound
}
func (d *keyDir) Lookup(ctx context.Context, id syntax.AtIdentifier) (*identity.Identity, error) {
	did, _ := id.AsDID()
	return d.LookupDID(ctx, did)
}
func (d *keyDir) Purge(context.Context, syntax.AtIdentifier) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.purges++
	d.cached = d.current
	return nil
}

func newKey(t *testing.T) *atcrypto.PrivateKeyK256 {
	t.Helper()
	k, err := atcrypto.GeneratePrivateKeyK256()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func pub(t *testing.T, k atcrypto.PrivateKey) atcrypto.PublicKey {
	t.Helper()
	p, err := k.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var records = map[string]map[string]any{
	"app.test.note/3k000000000a": {"$type": "app.test.note", "text": "one"},
	"app.test.note/3k000000000b": {"$type": "app.test.note", "text": "two", "n": int64(2)},
	"app.test.like/3k000000000c": {"$type": "app.test.like", "subject": "at://x"},
}

// TestLoad: a sound export loads; its records of a wanted collection come
// out in key order as atproto JSON; the rev is the commit's.
func TestLoad(t *testing.T) {
	ctx := context.Background()
	key := newKey(t)
	dir := &keyDir{cached: pub(t, key), current: pub(t, key)}
	car, err := repocartest.Build(ctx, alice, key, "3kaaaaaaaaa22", records)
	if err != nil {
		t.Fatal(err)
	}
	r, err := repocar.Load(ctx, bytes.NewReader(car), alice, int64(len(car)), dir)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if r.Rev() != "3kaaaaaaaaa22" {
		t.Errorf("rev %q", r.Rev())
	}
	var got []string
	err = r.Records(ctx, func(c string) bool { return c == "app.test.note" }, func(rec repocar.Record) error {
		js, err := rec.JSON()
		if err != nil {
			return err
		}
		got = append(got, rec.RKey+" "+rec.CID.String()[:4]+" "+string(js))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`3k000000000a bafy {"$type":"app.test.note","text":"one"}`,
		`3k000000000b bafy {"$type":"app.test.note","n":2,"text":"two"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestRefused: every kind of damage is refused with its reason, and a
// rotated key is accepted after one refresh of the DID document.
func TestRefused(t *testing.T) {
	ctx := context.Background()
	key, other := newKey(t), newKey(t)
	build := func(spoil repocartest.Spoil) []byte {
		car, err := repocartest.BuildSpoiled(ctx, alice, key, "3kaaaaaaaaa22", records, spoil)
		if err != nil {
			t.Fatal(err)
		}
		return car
	}
	sound := build(repocartest.Spoil{})
	load := func(car []byte, did syntax.DID, limit int64, dir identity.Directory) error {
		r, err := repocar.Load(ctx, bytes.NewReader(car), did, limit, dir)
		if err != nil {
			return err
		}
		return r.Records(ctx, nil, func(repocar.Record) error { return nil })
	}
	good := func() *keyDir { return &keyDir{cached: pub(t, key), current: pub(t, key)} }
	for _, tc := range []struct {
		name string
		err  error
		run  func() error
	}{
		{"a record's bytes changed", repocar.ErrTampered, func() error {
			return load(build(repocartest.Spoil{TamperRecord: "app.test.note/3k000000000b"}), alice, 1<<20, good())
		}},
		{"a record's block missing", repocar.ErrTampered, func() error {
			return load(build(repocartest.Spoil{DropRecord: "app.test.like/3k000000000c"}), alice, 1<<20, good())
		}},
		{"signed by another key", repocar.ErrBadSignature, func() error {
			return load(build(repocartest.Spoil{SignWith: other}), alice, 1<<20, good())
		}},
		{"another account's export", repocar.ErrWrongRepo, func() error {
			return load(sound, "did:plc:bob", 1<<20, good())
		}},
		{"larger than the bound", repocar.ErrTooLarge, func() error {
			return load(sound, alice, int64(len(sound)-1), good())
		}},
		{"not a CAR", repocar.ErrMalformed, func() error {
			return load([]byte("not a car file"), alice, 1<<20, good())
		}},
		{"truncated", repocar.ErrMalformed, func() error {
			return load(sound[:len(sound)-10], alice, 1<<20, good())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.run(); !errors.Is(err, tc.err) {
				t.Fatalf("got %v, want %v", err, tc.err)
			}
		})
	}

	t.Run("rotated key", func(t *testing.T) {
		dir := &keyDir{cached: pub(t, other), current: pub(t, key)}
		if err := load(sound, alice, 1<<20, dir); err != nil || dir.purges != 1 {
			t.Fatalf("after one refresh: %v (%d purges)", err, dir.purges)
		}
	})
}

// brokenReader hands out its bytes, then fails with err.
type brokenReader struct {
	data []byte
	err  error
}

func (b *brokenReader) Read(p []byte) (int, error) {
	if len(b.data) == 0 {
		return 0, b.err
	}
	n := copy(p, b.data)
	b.data = b.data[n:]
	return n, nil
}

// TestReaderFailure: an input that breaks off with an error of its own
// (a connection cut mid-body) is not a verdict on the export: the error
// wraps the reader's and none of the refusals, while the same bytes ending
// cleanly are a malformed export.
func TestReaderFailure(t *testing.T) {
	ctx := context.Background()
	key := newKey(t)
	dir := &keyDir{cached: pub(t, key), current: pub(t, key)}
	car, err := repocartest.Build(ctx, alice, key, "3kaaaaaaaaa22", records)
	if err != nil {
		t.Fatal(err)
	}
	cut := errors.New("connection reset by peer")
	for _, at := range []int{0, 5, len(car) / 2, len(car) - 1} {
		_, err := repocar.Load(ctx, &brokenReader{data: car[:at], err: cut}, alice, 1<<20, dir)
		if !errors.Is(err, cut) {
			t.Errorf("cut at %d: %v, want the reader's error", at, err)
		}
		for _, refusal := range []error{repocar.ErrMalformed, repocar.ErrTampered, repocar.ErrTooLarge,
			repocar.ErrWrongRepo, repocar.ErrBadSignature, repocar.ErrIdentity} {
			if errors.Is(err, refusal) {
				t.Errorf("cut at %d: %v is taken for %v", at, err, refusal)
			}
		}
	}
	if _, err := repocar.Load(ctx, bytes.NewReader(car[:len(car)/2]), alice, 1<<20, dir); !errors.Is(err, repocar.ErrMalformed) {
		t.Errorf("the same bytes ending cleanly: %v, want %v", err, repocar.ErrMalformed)
	}
}

// BenchmarkLoad measures loading, verifying and rendering a repository of
// 10,000 records: the records/s figure is backfill by CAR's ceiling on
// one core, before the database.
func BenchmarkLoad(b *testing.B) {
	ctx := context.Background()
	key, err := atcrypto.GeneratePrivateKeyK256()
	if err != nil {
		b.Fatal(err)
	}
	pk, _ := key.PublicKey()
	dir := &keyDir{cached: pk, current: pk}
	recs := map[string]map[string]any{}
	for i := range 10000 {
		tid := syntax.NewTIDFromInteger(uint64(1_700_000_000_000_000+i) << 10)
		recs["app.test.note/"+tid.String()] = map[string]any{"$type": "app.test.note", "text": "a note of a realistic length, some words", "createdAt": "2026-11-25T00:00:00Z"}
	}
	car, err := repocartest.Build(ctx, alice, key, "3kaaaaaaaaa22", recs)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(car)))
	b.ResetTimer()
	for b.Loop() {
		r, err := repocar.Load(ctx, bytes.NewReader(car), alice, int64(len(car)), dir)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		if err := r.Records(ctx, nil, func(rec repocar.Record) error {
			_, err := rec.JSON()
			n++
			return err
		}); err != nil || n != 10000 {
			b.Fatal(err, n)
		}
	}
	b.ReportMetric(float64(10000*b.N)/b.Elapsed().Seconds(), "records/s")
}
