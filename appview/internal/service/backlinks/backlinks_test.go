package backlinks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/storage"
)

// fakeStore records the queries that reach it and answers err.
type fakeStore struct {
	got []storage.BacklinkQuery
	err error
}

func (f *fakeStore) Backlinks(_ context.Context, q storage.BacklinkQuery) (storage.BacklinkPage, error) {
	f.got = append(f.got, q)
	return storage.BacklinkPage{Total: 1}, f.err
}

func (f *fakeStore) CountBacklinks(_ context.Context, q storage.BacklinkCountQuery) (storage.BacklinkCount, error) {
	f.got = append(f.got, storage.BacklinkQuery{Subject: q.Subject, Source: q.Source})
	return storage.BacklinkCount{Records: 2, DIDs: 1}, f.err
}

func (f *fakeStore) BacklinkDIDs(_ context.Context, q storage.BacklinkDIDQuery) (storage.BacklinkDIDPage, error) {
	f.got = append(f.got, storage.BacklinkQuery{Subject: q.Subject, Source: q.Source, Limit: q.Limit, Cursor: q.Cursor})
	return storage.BacklinkDIDPage{Total: 1}, f.err
}

var like = storage.LinkSource{Collection: "app.bsky.feed.like", Path: "subject.uri"}

const post = "at://did:plc:alice/app.bsky.feed.post/3k2a"

func TestRefusals(t *testing.T) {
	t.Parallel()
	dids := make([]string, storage.MaxBacklinkDIDs+1)
	for i := range dids {
		dids[i] = fmt.Sprintf("did:plc:user%d", i)
	}
	for _, tc := range []struct {
		name string
		q    storage.BacklinkQuery
		want string
	}{
		{"no subject", storage.BacklinkQuery{Source: like}, "subject is required"},
		{"not a URI", storage.BacklinkQuery{Subject: "alice", Source: like}, "subject must be"},
		{"a space", storage.BacklinkQuery{Subject: "at://did:plc:a/x y", Source: like}, "subject must be"},
		{"empty scheme", storage.BacklinkQuery{Subject: ":x", Source: like}, "subject must be"},
		{"nothing after the scheme", storage.BacklinkQuery{Subject: "did:", Source: like}, "subject must be"},
		{"too long", storage.BacklinkQuery{Subject: "https://a.test/" + strings.Repeat("a", storage.MaxLinkTargetLen), Source: like}, "longer than"},
		{"no source", storage.BacklinkQuery{Subject: post}, "source is required"},
		{"limit", storage.BacklinkQuery{Subject: post, Source: like, Limit: storage.MaxBacklinkLimit + 1}, "limit must be"},
		{"cursor", storage.BacklinkQuery{Subject: post, Source: like, Cursor: strings.Repeat("c", 2000)}, "invalid cursor"},
		{"bad did", storage.BacklinkQuery{Subject: post, Source: like, DIDs: []string{"did:plc:ok", "alice"}}, `did "alice" is not a DID`},
		{"too many dids", storage.BacklinkQuery{Subject: post, Source: like, DIDs: dids}, "at most 100 accounts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &fakeStore{}
			_, err := New(store).Backlinks(context.Background(), tc.q)
			if fail.KindOf(err) != fail.Invalid || !strings.Contains(fail.Message(err), tc.want) {
				t.Fatalf("err = %v (kind %v), want Invalid with %q", err, fail.KindOf(err), tc.want)
			}
			if len(store.got) != 0 {
				t.Fatalf("a refused query reached the store: %+v", store.got)
			}
		})
	}
}

func TestAccepted(t *testing.T) {
	t.Parallel()
	store := &fakeStore{}
	svc := New(store)
	ctx := context.Background()
	for _, subject := range []string{post, "did:plc:alice", "https://example.com/a?b=c", "did:web:example.com"} {
		if _, err := svc.Backlinks(ctx, storage.BacklinkQuery{Subject: subject, Source: like}); err != nil {
			t.Errorf("subject %q: %v", subject, err)
		}
	}
	// Repeated accounts reach the store once each, in their order.
	if _, err := svc.Backlinks(ctx, storage.BacklinkQuery{Subject: post, Source: like,
		DIDs: []string{"did:plc:b", "did:plc:a", "did:plc:b"}}); err != nil {
		t.Fatal(err)
	}
	if got := store.got[len(store.got)-1].DIDs; !slices.Equal(got, []string{"did:plc:b", "did:plc:a"}) {
		t.Fatalf("dids = %v", got)
	}
	if n, err := svc.CountBacklinks(ctx, storage.BacklinkCountQuery{Subject: post, Source: like, DIDs: true}); err != nil || n.Records != 2 || n.DIDs != 1 {
		t.Fatalf("count = %+v, %v", n, err)
	}
	if _, err := svc.CountBacklinks(ctx, storage.BacklinkCountQuery{Source: like}); fail.KindOf(err) != fail.Invalid {
		t.Fatalf("count without a subject: %v", err)
	}
	if _, err := svc.BacklinkDIDs(ctx, storage.BacklinkDIDQuery{Subject: post, Source: like, Limit: 100}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.BacklinkDIDs(ctx, storage.BacklinkDIDQuery{Subject: post, Source: like, Limit: 101}); fail.KindOf(err) != fail.Invalid {
		t.Fatalf("dids with limit 101: %v", err)
	}
}

func TestStoreErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := storage.BacklinkQuery{Subject: post, Source: like, Cursor: "junk"}
	refused := &fakeStore{err: fmt.Errorf("%w: bad cursor", storage.ErrInvalidBacklinkQuery)}
	_, err := New(refused).Backlinks(ctx, q)
	if fail.KindOf(err) != fail.Invalid || fail.Message(err) != "invalid backlink query: bad cursor" {
		t.Fatalf("a refused query: %v (kind %v)", err, fail.KindOf(err))
	}
	broken := &fakeStore{err: errors.New("disk on fire")}
	_, err = New(broken).BacklinkDIDs(ctx, storage.BacklinkDIDQuery{Subject: post, Source: like})
	if err == nil || fail.KindOf(err) != fail.Internal || fail.Message(err) != "" {
		t.Fatalf("a store failure: %v (kind %v), want an internal error", err, fail.KindOf(err))
	}
}

func TestParseSource(t *testing.T) {
	t.Parallel()
	src, err := ParseSource("app.bsky.feed.post:facets[app.bsky.richtext.facet].features[app.bsky.richtext.facet#mention].did")
	if err != nil || src.Collection != "app.bsky.feed.post" ||
		src.Path != "facets[app.bsky.richtext.facet].features[app.bsky.richtext.facet#mention].did" {
		t.Fatalf("ParseSource = %+v, %v", src, err)
	}
	if src, err := ParseSource("app.bsky.feed.like:.subject.uri"); err != nil || src != like {
		t.Fatalf("the leading dot: %+v, %v", src, err)
	}
	for _, bad := range []string{"", "app.bsky.feed.like", "app.bsky.feed.like:", "like:subject.uri", ":subject"} {
		if _, err := ParseSource(bad); fail.KindOf(err) != fail.Invalid || fail.Message(err) == "" {
			t.Errorf("ParseSource(%q) = %v, want an Invalid error", bad, err)
		}
	}
}
