package sqlstore_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// allLinks returns every row of the link index, sorted.
func allLinks(t *testing.T, s storage.Store) []string {
	t.Helper()
	db := sqlDB(t, s)
	rows, err := db.Writer().QueryContext(context.Background(),
		`SELECT t.target, t.source, l.uri, l.did FROM record_links l JOIN link_targets t ON t.id = l.tid
		ORDER BY t.target, t.source, l.uri`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a, b, c, d string
		if err := rows.Scan(&a, &b, &c, &d); err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.Join([]string{a, b, c, d}, " "))
	}
	return out
}

func likeRec(i, post int, rev string) storage.Record {
	r := storagetest.Rec(fmt.Sprintf("did:plc:u%d", i%9), "app.test.like", fmt.Sprintf("l%04d", i),
		time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC), map[string]any{
			"subject": map[string]any{"uri": fmt.Sprintf("at://did:plc:a/app.test.post/%d", post)},
		})
	r.Rev = rev
	return r
}

// TestIndexStoredLinks: the background pass indexes the records stored
// before the index, resumes where it stopped, and ends with exactly the
// links the live path would have stored, while records are changed and
// deleted beside it.
func TestIndexStoredLinks(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(t testing.TB) storage.Store) {
		t.Parallel()
		s := open(t)
		db := sqlDB(t, s)
		ctx := context.Background()
		var ops []storage.RecordOp
		for i := range 600 {
			ops = append(ops, storage.RecordOp{Record: likeRec(i, i%13, "3aaaaaaaaaa22")})
		}
		if err := s.ApplyBatch(ctx, storage.Batch{Ops: ops}); err != nil {
			t.Fatal(err)
		}
		want := allLinks(t, s)
		if len(want) != 600 {
			t.Fatalf("%d links written live", len(want))
		}
		// Forget the index, as if the records had been stored before it.
		if _, err := db.Writer().ExecContext(ctx, `DELETE FROM record_links`); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Writer().ExecContext(ctx, `UPDATE link_index_state SET done = false, after_uri = '', scanned = 0`); err != nil {
			t.Fatal(err)
		}
		if st, err := s.LinkIndexStatus(ctx); err != nil || st.Done {
			t.Fatalf("status %+v %v", st, err)
		}
		// Writers change and delete records while the pass runs.
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 600; i += 7 {
				op := storage.RecordOp{Record: likeRec(i, 100+i%5, "3aaaaaaaaaa33")}
				if i%2 == 0 {
					op = storage.RecordOp{Delete: true, Record: storage.Record{URI: op.Record.URI, Rev: "3aaaaaaaaaa33"}}
				} else {
					op.Record.CID = "bafyreihchanged"
				}
				if err := s.ApplyBatch(ctx, storage.Batch{Ops: []storage.RecordOp{op}}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		steps := 0
		for {
			done, err := s.IndexStoredLinks(ctx, 50)
			if err != nil {
				t.Fatal(err)
			}
			steps++
			if done {
				break
			}
		}
		wg.Wait()
		if steps < 12 {
			t.Errorf("the pass took %d steps of 50 over 600 records", steps)
		}
		got := allLinks(t, s)
		// What the live path stores for the records as they are now.
		if _, err := db.Writer().ExecContext(ctx, `DELETE FROM record_links`); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Writer().ExecContext(ctx, `UPDATE link_index_state SET done = false, after_uri = '', scanned = 0`); err != nil {
			t.Fatal(err)
		}
		for done := false; !done; {
			var err error
			if done, err = s.IndexStoredLinks(ctx, 1000); err != nil {
				t.Fatal(err)
			}
		}
		if fresh := allLinks(t, s); !reflect.DeepEqual(got, fresh) {
			t.Fatalf("after the pass beside writers, %d links; a fresh pass finds %d", len(got), len(fresh))
		}
		st, err := s.LinkIndexStatus(ctx)
		if err != nil || !st.Done || st.Scanned == 0 {
			t.Fatalf("status %+v %v", st, err)
		}
		if done, err := s.IndexStoredLinks(ctx, 50); err != nil || !done {
			t.Fatalf("after the end: %v %v", done, err)
		}
		checkLinkCounts(t, s)
	})
}

// TestBacklinkPlans: backlink pages, counts and linking accounts read the
// link index's own indexes on both databases, never a scan of the table.
func TestBacklinkPlans(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(t testing.TB) storage.Store) {
		t.Parallel()
		s := open(t)
		db := sqlDB(t, s)
		explain, target, src, epoch := `EXPLAIN QUERY PLAN `, `'at://x'`, `'app.test.like:subject.uri'`, `0`
		if s.Dialect() == "postgres" {
			explain, epoch = `EXPLAIN (COSTS OFF) `, `timestamptz 'epoch'`
			// A planner facing an empty table may prefer a scan.
			if _, err := db.Writer().Exec(`SET enable_seqscan = off`); err != nil {
				t.Fatal(err)
			}
		}
		for _, q := range []string{
			`SELECT id, records FROM link_targets WHERE target = ` + target + ` AND source = ` + src,
			`SELECT uri, did, created_at FROM record_links WHERE tid = 1 ORDER BY created_at DESC, uri DESC LIMIT 17`,
			`SELECT COUNT(DISTINCT did) FROM record_links WHERE tid = 1`,
			`SELECT DISTINCT did FROM record_links WHERE tid = 1 AND did > 'x' ORDER BY did LIMIT 17`,
			`DELETE FROM record_links WHERE created_at = ` + epoch + ` AND uri = 'at://x'`,
		} {
			conn, err := db.Writer().Conn(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if s.Dialect() == "postgres" {
				_, _ = conn.ExecContext(context.Background(), `SET enable_seqscan = off`)
			}
			rows, err := conn.QueryContext(context.Background(), explain+q)
			if err != nil {
				t.Fatal(err)
			}
			var plan []string
			for rows.Next() {
				cols, _ := rows.Columns()
				vals := make([]any, len(cols))
				for i := range vals {
					vals[i] = new(any)
				}
				if err := rows.Scan(vals...); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, fmt.Sprint(*(vals[len(vals)-1].(*any))))
			}
			rows.Close()
			conn.Close()
			text := strings.Join(plan, "\n")
			if strings.Contains(text, "SCAN record_links") && !strings.Contains(text, "USING") || strings.Contains(text, "Seq Scan") {
				t.Errorf("%s\nscans the table:\n%s", q, text)
			}
			t.Logf("%s\n%s", q, text)
		}
	})
}

// checkLinkCounts fails unless the kept counts (link_targets) are exactly
// the links' counts per target and source.
func checkLinkCounts(t *testing.T, s storage.Store) {
	t.Helper()
	read := func(q string) map[string]int64 {
		rows, err := sqlDB(t, s).Writer().QueryContext(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]int64{}
		for rows.Next() {
			var target, source string
			var n int64
			if err := rows.Scan(&target, &source, &n); err != nil {
				t.Fatal(err)
			}
			out[target+" "+source] = n
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	kept := read(`SELECT target, source, records FROM link_targets WHERE records <> 0`)
	counted := read(`SELECT t.target, t.source, COUNT(*) FROM record_links l JOIN link_targets t ON t.id = l.tid
		GROUP BY t.target, t.source`)
	if !reflect.DeepEqual(kept, counted) {
		t.Fatalf("kept counts %v\ncounted %v", kept, counted)
	}
}

// TestLinkCountsFollowTheLinks: the kept counts follow every path that
// writes or removes links: batches, updates that change a record's links,
// replays, deletes, deletion by account, a script's raw write and the
// background pass.
func TestLinkCountsFollowTheLinks(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(t testing.TB) storage.Store) {
		t.Parallel()
		s := open(t)
		ctx := context.Background()
		apply := func(ops ...storage.RecordOp) {
			t.Helper()
			if err := s.ApplyBatch(ctx, storage.Batch{Ops: ops}); err != nil {
				t.Fatal(err)
			}
		}
		var ops []storage.RecordOp
		for i := range 90 {
			ops = append(ops, storage.RecordOp{Record: likeRec(i, i%4, "3aaaaaaaaaa22")})
		}
		apply(ops...)
		apply(ops[:30]...) // a replay
		checkLinkCounts(t, s)
		count := func(post int) int64 {
			t.Helper()
			c, err := s.CountBacklinks(ctx, storage.BacklinkCountQuery{
				Subject: fmt.Sprintf("at://did:plc:a/app.test.post/%d", post),
				Source:  storage.LinkSource{Collection: "app.test.like", Path: "subject.uri"}})
			if err != nil {
				t.Fatal(err)
			}
			return c.Records
		}
		if n := count(1); n != 23 {
			t.Fatalf("post 1 has %d likes, want 23", n)
		}
		// Every like of post 3 moves to post 1, some of post 2 are deleted.
		var moves []storage.RecordOp
		for i := 3; i < 90; i += 4 {
			moves = append(moves, storage.RecordOp{Record: likeRec(i, 1, "3aaaaaaaaaa33")})
		}
		for i := 2; i < 40; i += 4 {
			moves = append(moves, storage.RecordOp{Delete: true, Record: storage.Record{URI: likeRec(i, 2, "").URI, Rev: "3aaaaaaaaaa33"}})
		}
		apply(moves...)
		checkLinkCounts(t, s)
		if n := count(1); n != 45 {
			t.Fatalf("post 1 has %d likes after the moves, want 45", n)
		}
		if n := count(3); n != 0 {
			t.Fatalf("post 3 has %d likes after the moves", n)
		}
		if _, err := s.DeleteRecordsByDID(ctx, "did:plc:u4"); err != nil {
			t.Fatal(err)
		}
		checkLinkCounts(t, s)
		if _, err := s.RawQuery(ctx, `DELETE FROM records WHERE did = 'did:plc:u5'`, nil, 10, 1<<20); err != nil {
			t.Fatal(err)
		}
		checkLinkCounts(t, s)
		// The background pass over records whose links are gone.
		db := sqlDB(t, s)
		for _, q := range []string{`DELETE FROM record_links WHERE did = 'did:plc:u6'`,
			`UPDATE link_index_state SET done = false, after_uri = '', scanned = 0`} {
			if _, err := db.Writer().ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		checkLinkCounts(t, s)
		for done := false; !done; {
			var err error
			if done, err = s.IndexStoredLinks(ctx, 7); err != nil {
				t.Fatal(err)
			}
		}
		checkLinkCounts(t, s)
	})
}
