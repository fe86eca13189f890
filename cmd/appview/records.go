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
	"strings"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/internal/repocar"
	"github.com/lexview/lexview/storage"
)

// importBatchSize is the number of records handed to the writer at once.
const importBatchSize = 1000

// maxReportedProblems bounds the records and lines not imported that are
// listed one by one.
const maxReportedProblems = 20

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
			"{\"uri\", \"record\"} JSON object per line, optional \"cid\" (by default the\n" +
			"CID the record has in a repository) and \"rev\". They go\n" +
			"through the batch writer like ingested records: validated against their\n" +
			"record lexicon and run through the collection's record-event scripts.\n" +
			"It prints how many records were stored, refused by validation, failed\n" +
			"their script (kept for automatic retries, which a serving instance runs,\n" +
			"then dead letters) or were skipped by it, and how many lines were\n" +
			"malformed (skipped; --strict stops at the first). Each record or line not\n" +
			"imported is listed on stderr with its line number, and makes the command\n" +
			"exit with status 1 after the rest is imported. It may run beside a\n" +
			"serving instance: it starts only the writer.",
		define: func(fs *flag.FlagSet) func(context.Context, *invocation) int {
			strict := fs.Bool("strict", false, "stop at the first malformed line (default: report it and go on)")
			return func(ctx context.Context, x *invocation) int {
				if err := recordsImport(ctx, x.cfg, x.args[0], *strict, x.stdout, x.stderr); err != nil {
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
// ingestion, backfill or the metrics listener. It prints what it did on
// stdout and each record or line not imported on stderr, and fails when
// any was not.
func recordsImport(ctx context.Context, cfg appview.Config, path string, strict bool, stdout, stderr io.Writer) (err error) {
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
	tally, err := importRecords(ctx, app.Writer(), in, strict, stderr)
	fmt.Fprintln(stdout, tally)
	return err
}

// importTally counts what an import did.
type importTally struct {
	Stored       int // committed
	Flagged      int // of Stored, those stored with a validation error (validation modes hide and flag)
	Skipped      int // a record-event script chose not to store them
	Refused      int // validation refused them
	ScriptFailed int // their record-event script failed
	Malformed    int // lines that are no record
}

// notImported counts the records and lines that were not imported, by
// failure (a script's deliberate skip is not one).
func (t importTally) notImported() int { return t.Refused + t.ScriptFailed + t.Malformed }

// String is the import's summary line.
func (t importTally) String() string {
	out := "imported " + plural(t.Stored, "record")
	if t.notImported() > 0 {
		var parts []string
		for _, p := range []struct {
			what string
			n    int
		}{
			{"refused", t.Refused},
			{"script failed", t.ScriptFailed},
			{"malformed lines", t.Malformed},
		} {
			if p.n > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", p.what, p.n))
			}
		}
		out += "; not imported: " + strings.Join(parts, ", ")
		if t.ScriptFailed > 0 {
			out += " (failed scripts are retried automatically, then kept as dead letters)"
		}
	}
	if t.Skipped > 0 {
		out += fmt.Sprintf("; skipped by their record script: %d", t.Skipped)
	}
	if t.Flagged > 0 {
		out += fmt.Sprintf("; stored with a validation error: %d (not served by default, see docs/ingestion.md#validation)", t.Flagged)
	}
	return out
}

// plural is n followed by noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// importer writes an import's records in batches and reports what is not
// imported.
type importer struct {
	ctx      context.Context
	w        recordWriter
	report   io.Writer
	tally    importTally
	reported int
	batch    []storage.Change
	lines    map[string]int // the line of each batched record's URI
}

// problem reports one record or line not imported (the first
// maxReportedProblems of them).
func (im *importer) problem(format string, a ...any) {
	if im.reported < maxReportedProblems {
		fmt.Fprintf(im.report, format+"\n", a...)
	}
	im.reported++
}

// add batches c, read on line, and writes the batch once full.
func (im *importer) add(c storage.Change, line int) error {
	im.batch = append(im.batch, c)
	im.lines[c.URI()] = line
	if len(im.batch) == importBatchSize {
		return im.flush()
	}
	return nil
}

// flush writes the batch and counts what became of it.
func (im *importer) flush() error {
	if len(im.batch) == 0 {
		return nil
	}
	res, err := im.w.Write(im.ctx, importSource, im.batch)
	im.tally.Skipped += res.Skipped
	im.tally.Stored += res.Accepted - res.Skipped - len(res.ScriptFailed)
	for _, r := range res.Rejected {
		im.tally.Refused++
		im.problem("line %d: %s refused: %v", im.lines[r.URI], r.URI, r.Err)
	}
	for _, r := range res.Flagged {
		im.tally.Flagged++
		im.problem("line %d: %s stored with a validation error: %v", im.lines[r.URI], r.URI, r.Err)
	}
	for _, r := range res.ScriptFailed {
		im.tally.ScriptFailed++
		msg, _, _ := strings.Cut(r.Err.Error(), "\n") // without the Lua stack traceback
		im.problem("line %d: %s failed its record script: %s", im.lines[r.URI], r.URI, msg)
	}
	im.batch = im.batch[:0]
	clear(im.lines)
	return err
}

// importRecords writes the records of in through w and returns what it
// did. A malformed line is reported on report by number and skipped, or,
// when strict, stops the import there. Records the writer refuses (no
// record lexicon, invalid against it) or whose record-event script fails
// are reported too, and the import goes on; the error then says how many
// records and lines were not imported.
func importRecords(ctx context.Context, w recordWriter, in io.Reader, strict bool, report io.Writer) (importTally, error) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	im := &importer{ctx: ctx, w: w, report: report, lines: map[string]int{}}
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		c, err := parseImportLine(sc.Bytes(), time.Now())
		if err != nil && strict {
			return im.tally, errors.Join(fmt.Errorf("line %d: %w (--strict: stopped there)", line, err), im.flush())
		}
		if err != nil {
			im.tally.Malformed++
			im.problem("line %d: malformed, skipped: %v", line, err)
			continue
		}
		if err := im.add(c, line); err != nil {
			return im.tally, err
		}
	}
	if err := errors.Join(sc.Err(), im.flush()); err != nil {
		return im.tally, err
	}
	if im.reported > maxReportedProblems {
		fmt.Fprintf(report, "... and %d more\n", im.reported-maxReportedProblems)
	}
	if t := im.tally; t.notImported() > 0 {
		return t, fmt.Errorf("not imported: %s and %s (listed above)",
			plural(t.Refused+t.ScriptFailed, "record"), plural(t.Malformed, "malformed line"))
	}
	return im.tally, nil
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
	var fields map[string]any
	if err := json.Unmarshal(l.Record, &fields); err != nil || fields == nil {
		return storage.Change{}, errors.New("record must be a JSON object")
	}
	if l.CID == "" {
		// The CID the record has in a repository.
		if l.CID, err = repocar.RecordCID(l.Record); err != nil {
			return storage.Change{}, fmt.Errorf("record is not atproto data: %w", err)
		}
	} else if _, err := syntax.ParseCID(l.CID); err != nil {
		return storage.Change{}, fmt.Errorf("invalid cid %q", l.CID)
	}
	return storage.Change{
		Op: storage.OpCreate, DID: did.String(), Collection: uri.Collection().String(), RKey: uri.RecordKey().String(),
		CID: l.CID, Rev: l.Rev, Record: l.Record, Received: now,
	}, nil
}
