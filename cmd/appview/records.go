package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/storage"
)

// importBatchSize is the number of records handed to the writer at once.
const importBatchSize = 1000

// maxReportedRejections bounds the refused records listed one by one.
const maxReportedRejections = 20

// importSource labels imported records in the writer's metrics and logs.
const importSource = "import"

// importLine is one line of an import file.
type importLine struct {
	URI    string          `json:"uri"`
	CID    string          `json:"cid"`
	Rev    string          `json:"rev"`
	Record json.RawMessage `json:"record"`
}

// recordWriter is what the import writes through: the App's batch writer,
// which validates each record against its lexicon and runs record-event
// scripts before committing.
type recordWriter interface {
	Write(ctx context.Context, source string, changes []storage.Change) (appview.WriteResult, error)
}

func importCommand() *command {
	return &command{
		name: "records import", synopsis: "FILE", nargs: 1, scope: scopeApp,
		summary: "store records from a JSON-lines file (- for stdin)",
		about: "Stores records from FILE (\"-\" reads standard input): one\n" +
			"{\"uri\", \"cid\", \"record\"} JSON object per line, optional \"rev\". They go\n" +
			"through the batch writer like ingested records: validated against their\n" +
			"record lexicon and run through record-event scripts. Refused records are\n" +
			"listed on stderr and make the command exit with status 1 after the rest is\n" +
			"imported. It may run beside a serving instance: it starts only the writer.",
		define: func(*flag.FlagSet) func(context.Context, *invocation) int {
			return func(ctx context.Context, x *invocation) int {
				if err := recordsImport(ctx, x.cfg, x.args[0], x.stdout, x.stderr); err != nil {
					return x.failed(err)
				}
				return 0
			}
		},
	}
}

// recordsImport reads JSON lines ({"uri", "cid", "record"}) from path ("-"
// for standard input) and writes them through the App's writer, which may
// run beside a serving instance: only the writer is started, not
// ingestion, backfill or the metrics listener. Records the writer refuses
// are listed on stderr and make the command fail after the rest is
// imported.
func recordsImport(ctx context.Context, cfg appview.Config, path string, stdout, stderr io.Writer) (err error) {
	in := io.Reader(os.Stdin)
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	app, err := appview.New(cfg)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		err = errors.Join(err, app.Shutdown(sctx))
	}()
	if err := app.StartWriting(ctx); err != nil {
		return err
	}
	n, err := importRecords(ctx, app.Writer(), in, stderr)
	fmt.Fprintf(stdout, "imported %d records\n", n)
	return err
}

// importRecords writes the records of in through w and returns how many
// were written. A malformed line stops the import (reported by number);
// records the writer refuses (no record lexicon, invalid against it) are
// reported on report and counted in the returned error, and the import
// goes on.
func importRecords(ctx context.Context, w recordWriter, in io.Reader, report io.Writer) (int, error) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	var batch []storage.Change
	total, rejected := 0, 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		res, err := w.Write(ctx, importSource, batch)
		total += res.Accepted
		for _, r := range res.Rejected {
			if rejected < maxReportedRejections {
				fmt.Fprintf(report, "rejected %s: %v\n", r.URI, r.Err)
			}
			rejected++
		}
		batch = batch[:0]
		return err
	}
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		c, err := parseImportLine(sc.Bytes(), time.Now())
		if err != nil {
			return total, errors.Join(fmt.Errorf("line %d: %w", line, err), flush())
		}
		batch = append(batch, c)
		if len(batch) == importBatchSize {
			if err := flush(); err != nil {
				return total, err
			}
		}
	}
	if err := errors.Join(sc.Err(), flush()); err != nil {
		return total, err
	}
	if rejected > 0 {
		if rejected > maxReportedRejections {
			fmt.Fprintf(report, "... and %d more\n", rejected-maxReportedRejections)
		}
		return total, fmt.Errorf("%d records were rejected (see above) and not imported", rejected)
	}
	return total, nil
}

func parseImportLine(raw []byte, now time.Time) (storage.Change, error) {
	var l importLine
	if err := json.Unmarshal(raw, &l); err != nil {
		return storage.Change{}, fmt.Errorf("not a JSON object: %w", err)
	}
	uri, err := syntax.ParseATURI(l.URI)
	if err != nil || uri.RecordKey() == "" {
		return storage.Change{}, fmt.Errorf("invalid AT URI %q", l.URI)
	}
	did, err := uri.Authority().AsDID()
	if err != nil {
		return storage.Change{}, errors.New("the AT URI authority must be a DID")
	}
	if _, err := syntax.ParseCID(l.CID); err != nil {
		return storage.Change{}, fmt.Errorf("invalid cid %q", l.CID)
	}
	var fields map[string]any
	if err := json.Unmarshal(l.Record, &fields); err != nil || fields == nil {
		return storage.Change{}, errors.New("record must be a JSON object")
	}
	return storage.Change{
		Op: storage.OpCreate, DID: did.String(), Collection: uri.Collection().String(), RKey: uri.RecordKey().String(),
		CID: l.CID, Rev: l.Rev, Record: l.Record, Received: now,
	}, nil
}
