package lexicon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage/sqlite"
)

// postLexicon is a record lexicon: a post with required text of at most
// 300 characters and an optional creation time.
const postLexicon = `{
  "lexicon": 1,
  "id": "com.example.post",
  "defs": {
    "main": {
      "type": "record",
      "key": "tid",
      "record": {
        "type": "object",
        "required": ["text"],
        "properties": {
          "text": {"type": "string", "maxLength": 300},
          "createdAt": {"type": "string", "format": "datetime"}
        }
      }
    }
  }
}`

// Parse checks a lexicon document on its own, without storing it.
func ExampleParse() {
	doc, err := lexicon.Parse([]byte(postLexicon))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(doc.ID, doc.Kind)

	_, err = lexicon.Parse([]byte(`{"lexicon": 2, "id": "com.example.post", "defs": {}}`))
	fmt.Println(lexicon.IsParseError(err))
	// Output:
	// com.example.post record
	// true
}

// A registry over a store: put a lexicon into it, then validate records
// against the current snapshot.
func ExampleRegistry() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "lexicon-example")
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

	reg := lexicon.NewRegistry(store)
	if err := reg.Load(ctx); err != nil { // what the store already holds: nothing yet
		log.Fatal(err)
	}
	lex, created, err := reg.Put(ctx, lexicon.Upload{Document: json.RawMessage(postLexicon)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(lex.ID, lex.Kind, "revision", lex.Revision, "created", created)

	snap := reg.Snapshot()
	fmt.Println("indexed collections:", snap.RecordCollections())
	valid := `{"$type": "com.example.post", "text": "hello", "createdAt": "2026-01-02T03:04:05.000Z"}`
	fmt.Println("valid:", snap.ValidateRecord("com.example.post", json.RawMessage(valid)) == nil)
	missing := `{"$type": "com.example.post", "createdAt": "2026-01-02T03:04:05.000Z"}`
	fmt.Println("without text:", snap.ValidateRecord("com.example.post", json.RawMessage(missing)))
	err = snap.ValidateRecord("com.example.like", json.RawMessage(`{}`))
	fmt.Println("unknown collection:", err)

	// Uploading the document again makes a new revision.
	lex, created, err = reg.Put(ctx, lexicon.Upload{Document: json.RawMessage(postLexicon)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(lex.ID, "revision", lex.Revision, "created", created)
	// Output:
	// com.example.post record revision 1 created true
	// indexed collections: [com.example.post]
	// valid: true
	// without text: record does not match lexicon com.example.post: required field missing: text
	// unknown collection: no record lexicon for the collection
	// com.example.post revision 2 created false
}
