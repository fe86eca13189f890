package storagetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

// RunNetworkLexicons runs the suite for network lexicons' provenance rows
// (NetworkLexiconStore).
func RunNetworkLexicons(t *testing.T, open func(t testing.TB) storage.Store) {
	t.Run("Rows", func(t *testing.T) { testNetworkLexiconRows(t, open(t)) })
}

func testNetworkLexiconRows(t *testing.T, s storage.Store) {
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 12, 0, 0, 123_000_000, time.UTC)
	if _, err := s.GetNetworkLexicon(ctx, "com.example.a.b"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("get absent: %v", err)
	}
	if err := s.DeleteNetworkLexicon(ctx, "com.example.a.b"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("delete absent: %v", err)
	}
	b := storage.NetworkLexicon{NSID: "com.example.a.b", AuthorityDID: "did:plc:one", CID: "bafy1", LastFetchedAt: at, CreatedAt: at}
	a := storage.NetworkLexicon{NSID: "com.example.a.a", AuthorityDID: "did:plc:two", TargetCollection: "com.example.a.b",
		CID: "bafy2", LastFetchedAt: at, CreatedAt: at}
	for _, n := range []storage.NetworkLexicon{b, a} {
		if err := s.PutNetworkLexicon(ctx, n); err != nil {
			t.Fatalf("put %s: %v", n.NSID, err)
		}
	}
	list, err := s.ListNetworkLexicons(ctx)
	if err != nil || len(list) != 2 || list[0].NSID != "com.example.a.a" || list[1].NSID != "com.example.a.b" {
		t.Fatalf("list: %v %+v", err, list)
	}
	if got := list[0]; got.TargetCollection != "com.example.a.b" || got.AuthorityDID != "did:plc:two" || got.CID != "bafy2" ||
		!got.LastFetchedAt.Equal(at) || !got.CreatedAt.Equal(at) || !got.UpstreamDeletedAt.IsZero() {
		t.Fatalf("stored %+v", got)
	}
	// A replace keeps created_at and sets the rest.
	later := at.Add(time.Hour)
	b2 := storage.NetworkLexicon{NSID: "com.example.a.b", AuthorityDID: "did:plc:three", CID: "bafy3", LastFetchedAt: later,
		UpstreamDeletedAt: later, CreatedAt: later}
	if err := s.PutNetworkLexicon(ctx, b2); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetNetworkLexicon(ctx, "com.example.a.b")
	if err != nil || got.AuthorityDID != "did:plc:three" || got.CID != "bafy3" || !got.LastFetchedAt.Equal(later) ||
		!got.UpstreamDeletedAt.Equal(later) || !got.CreatedAt.Equal(at) || got.TargetCollection != "" {
		t.Fatalf("replaced: %v %+v", err, got)
	}
	if err := s.DeleteNetworkLexicon(ctx, "com.example.a.b"); err != nil {
		t.Fatal(err)
	}
	if list, _ := s.ListNetworkLexicons(ctx); len(list) != 1 || list[0].NSID != "com.example.a.a" {
		t.Fatalf("after delete: %+v", list)
	}
}
