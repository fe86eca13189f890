package storage_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/sqlite"
)

// Open the embedded SQLite backend, write a batch of records with the
// stream position that produced them, and page through them newest first
// with opaque cursors. (This external test package may import
// storage/sqlite: only storage's own package could not.)
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "storage-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := sqlite.Open(ctx, filepath.Join(dir, "lexview.db"), sqlite.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		log.Fatal(err)
	}

	// Changes as an event source delivers them; the batch writer turns
	// them into RecordOps. Here we do that by hand.
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	changes := []storage.Change{
		{Op: storage.OpCreate, DID: "did:plc:alice", Collection: "com.example.post", RKey: "3k1", Record: []byte(`{"text":"one"}`)},
		{Op: storage.OpCreate, DID: "did:plc:alice", Collection: "com.example.post", RKey: "3k2", Record: []byte(`{"text":"two"}`)},
		{Op: storage.OpCreate, DID: "did:plc:bob", Collection: "com.example.post", RKey: "3k3", Record: []byte(`{"text":"three"}`)},
		{Op: storage.OpCreate, DID: "did:plc:bob", Collection: "com.example.like", RKey: "3k4", Record: []byte(`{}`)},
		{Op: storage.OpDelete, DID: "did:plc:alice", Collection: "com.example.post", RKey: "3k1"},
	}
	batch := storage.Batch{Cursors: []storage.StreamCursor{{Name: "source:jetstream", Value: 1700000000000005}}}
	for i, c := range changes {
		batch.Ops = append(batch.Ops, storage.RecordOp{
			Delete: c.Op == storage.OpDelete,
			Record: storage.Record{
				URI: c.URI(), DID: c.DID, Collection: c.Collection, RKey: c.RKey,
				CID: "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm", Value: c.Record,
				IndexedAt: base.Add(time.Duration(i) * time.Second),
			},
		})
	}
	if err := store.ApplyBatch(ctx, batch); err != nil {
		log.Fatal(err)
	}
	pos, _ := store.GetStreamCursor(ctx, "source:jetstream")
	n, _ := store.CountRecords(ctx, "com.example.post")
	fmt.Println("stream at", pos, "posts:", n)

	// Page through the posts, one record a page. A cursor is bound to its
	// listing by a scope of the caller's choosing.
	const scope = "example\x00com.example.post"
	q := storage.ListQuery{Collection: "com.example.post", Limit: 1}
	for {
		page, err := store.ListRecords(ctx, q)
		if err != nil {
			log.Fatal(err)
		}
		for _, r := range page.Records {
			fmt.Println(r.URI, string(r.Value), r.IndexedAt.Format(time.TimeOnly))
		}
		if page.Next == nil {
			break
		}
		cursor := storage.EncodeCursor(scope, *page.Next) // what a client gets
		after, err := storage.DecodeCursor(scope, cursor) // what it sends back
		if err != nil {
			log.Fatal(err)
		}
		q.After = &after
	}

	// Without a collection, every collection is listed.
	all, err := store.ListRecords(ctx, storage.ListQuery{Limit: 10})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("every collection:", len(all.Records), "records, newest", all.Records[0].URI)
	// Output:
	// stream at 1700000000000005 posts: 2
	// at://did:plc:bob/com.example.post/3k3 {"text":"three"} 03:04:07
	// at://did:plc:alice/com.example.post/3k2 {"text":"two"} 03:04:06
	// every collection: 3 records, newest at://did:plc:bob/com.example.like/3k4
}

// A cursor round-trips a position under the scope it was made for, and is
// refused under any other.
func ExampleEncodeCursor() {
	at := time.Date(2026, 1, 2, 3, 4, 5, 678000, time.UTC)
	cursor := storage.EncodeCursor("posts", storage.Position{Time: at, URI: "at://did:plc:alice/com.example.post/3k2"})

	pos, err := storage.DecodeCursor("posts", cursor)
	fmt.Println(pos.Time.Format(time.RFC3339Nano), pos.URI, err)
	_, err = storage.DecodeCursor("likes", cursor)
	fmt.Println(errors.Is(err, storage.ErrInvalidCursor))
	// Output:
	// 2026-01-02T03:04:05.000678Z at://did:plc:alice/com.example.post/3k2 <nil>
	// true
}
