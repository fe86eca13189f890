package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/storage"
)

// importBatchSize is the number of records written per transaction.
const importBatchSize = 1000

// importLine is one line of an import file.
type importLine struct {
	URI    string          `json:"uri"`
	CID    string          `json:"cid"`
	Rev    string          `json:"rev"`
	Record json.RawMessage `json:"record"`
}

// recordsImport reads JSON lines ({"uri", "cid", "record"}) from path ("-"
// for standard input) and stores them in batches.
func recordsImport(ctx context.Context, cfg appview.Config, path string, stdout io.Writer) error {
	in := io.Reader(os.Stdin)
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	store, err := appview.OpenStore(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		return err
	}
	n, err := importRecords(ctx, store, in, time.Now)
	fmt.Fprintf(stdout, "imported %d records\n", n)
	return err
}

func importRecords(ctx context.Context, store storage.RecordStore, in io.Reader, now func() time.Time) (int, error) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	var batch []storage.RecordOp
	total := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := store.ApplyBatch(ctx, storage.Batch{Ops: batch}); err != nil {
			return err
		}
		total += len(batch)
		batch = batch[:0]
		return nil
	}
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		rec, err := parseImportLine(sc.Bytes(), now())
		if err != nil {
			return total, fmt.Errorf("line %d: %w", line, err)
		}
		batch = append(batch, storage.RecordOp{Record: rec})
		if len(batch) == importBatchSize {
			if err := flush(); err != nil {
				return total, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return total, err
	}
	return total, flush()
}

func parseImportLine(raw []byte, now time.Time) (storage.Record, error) {
	var l importLine
	if err := json.Unmarshal(raw, &l); err != nil {
		return storage.Record{}, fmt.Errorf("not a JSON object: %w", err)
	}
	uri, err := syntax.ParseATURI(l.URI)
	if err != nil || uri.RecordKey() == "" {
		return storage.Record{}, fmt.Errorf("invalid AT URI %q", l.URI)
	}
	did, err := uri.Authority().AsDID()
	if err != nil {
		return storage.Record{}, errors.New("the AT URI authority must be a DID")
	}
	if _, err := syntax.ParseCID(l.CID); err != nil {
		return storage.Record{}, fmt.Errorf("invalid cid %q", l.CID)
	}
	var fields map[string]any
	if err := json.Unmarshal(l.Record, &fields); err != nil || fields == nil {
		return storage.Record{}, errors.New("record must be a JSON object")
	}
	return storage.Record{
		URI: uri.String(), DID: did.String(), Collection: uri.Collection().String(), RKey: uri.RecordKey().String(),
		CID: l.CID, Rev: l.Rev, Value: l.Record, IndexedAt: now,
	}, nil
}
