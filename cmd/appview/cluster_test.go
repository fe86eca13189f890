package main

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/lexview/lexview/internal/jetstreamtest"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// failoverKillsEnv sets how many leaders TestFailoverLosesNothing kills
// (default 2; docs/operations.md reports a run with 10).
const failoverKillsEnv = "LEXVIEW_FAILOVER_KILLS"

// TestFailoverLosesNothing runs three `appview serve` processes on one
// PostgreSQL database while a stream of creates, updates and deletes plays
// through the Jetstream stand-in. The leader (the holder of the lease, the
// only one subscribed) is killed with SIGKILL, several times, and replaced.
// Each time another instance takes over within 10 s, and at the end the
// index holds exactly the state the stream describes. From the database's
// side, the stream cursor is written by one instance at a time: a trigger
// records the connection's application_name (the instance) of every cursor
// write, and once a later instance has written, an earlier one never
// writes again.
func TestFailoverLosesNothing(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs and kills the binary")
	}
	bin := binary(t)
	dbURL := storagetest.PostgresURL(t)
	ctx := context.Background()
	const collection = "app.test.failover"
	store := streamStore(t, dbURL, collection)
	db, err := sql.Open("postgres", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE cursor_writes (seq BIGSERIAL PRIMARY KEY, instance TEXT NOT NULL, value BIGINT NOT NULL);
		CREATE FUNCTION note_cursor_write() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO cursor_writes (instance, value) VALUES (current_setting('application_name'), NEW.value);
			RETURN NEW;
		END; $$;
		CREATE TRIGGER note_cursor_write AFTER INSERT OR UPDATE ON stream_cursors FOR EACH ROW EXECUTE FUNCTION note_cursor_write();`); err != nil {
		t.Fatal(err)
	}

	js := jetstreamtest.New(t)
	procs := map[string]*exec.Cmd{}
	next := 0
	start := func() {
		next++
		id := "inst-" + strconv.Itoa(next)
		u, _ := url.Parse(dbURL)
		q := u.Query()
		q.Set("application_name", id)
		u.RawQuery = q.Encode()
		cmd := exec.Command(bin, "serve")
		cmd.Env = append(os.Environ(), "DATABASE_URL="+u.String(), "INSTANCE_ID="+id, "JETSTREAM_URL="+js.URL, "PORT=0",
			"LOG_LEVEL=error", "PLC_URL=http://127.0.0.1:1", "RELAY_URL=http://127.0.0.1:1",
			"TOKEN_ENCRYPTION_KEY=MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
		cmd.Dir = t.TempDir()
		if dir := os.Getenv("LEXVIEW_FAILOVER_LOG"); dir != "" {
			f, _ := os.Create(dir + "/" + id + ".log")
			cmd.Stderr = f
			cmd.Env = append(cmd.Env, "LOG_LEVEL=info")
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs[id] = cmd
	}
	defer func() {
		for _, cmd := range procs {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	// leader waits for a live lease held by a running instance other than
	// not, and returns it.
	leader := func(not string) string {
		deadline := time.Now().Add(30 * time.Second)
		for {
			info, err := store.GetLease(ctx, "leader")
			if err == nil && info.Live && info.Holder != not && procs[info.Holder] != nil {
				return info.Holder
			}
			if time.Now().After(deadline) {
				t.Fatalf("no leader but %q after 30 s (lease %+v, %v)", not, info, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	subscriptions := func() int { return len(js.Subscriptions()) }
	for range 3 {
		start()
	}
	first := leader("")
	for deadline := time.Now().Add(20 * time.Second); subscriptions() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the leader never subscribed")
		}
	}

	kills := 2
	if n, err := strconv.Atoi(os.Getenv(failoverKillsEnv)); err == nil && n > 0 {
		kills = n
	}
	rng := rand.New(rand.NewPCG(2, uint64(time.Now().UnixNano())))
	const keys = 200
	events := 600 * (kills + 1)
	killAt := map[int]bool{}
	for k := 1; k <= kills; k++ {
		killAt[k*events/(kills+1)+rng.IntN(100)-50] = true
	}
	want := map[string]int{}
	var takeovers []time.Duration
	current := first
	leaders := []string{first}
	for i := range events {
		playEvent(js, rng, "did:plc:failover", collection, keys, i, want)
		if killAt[i] {
			subs := subscriptions()
			killed := time.Now()
			procs[current].Process.Kill() // SIGKILL: no release, no goodbye
			procs[current].Wait()
			delete(procs, current)
			start() // back to three
			current = leader(current)
			leaders = append(leaders, current)
			for subscriptions() == subs {
				if time.Since(killed) > 30*time.Second {
					t.Fatalf("instance %s leads but never subscribed", current)
				}
				time.Sleep(5 * time.Millisecond)
			}
			took := time.Since(killed)
			takeovers = append(takeovers, took)
			t.Logf("kill %d: %s took over in %v", len(takeovers), current, took.Round(time.Millisecond))
		}
		time.Sleep(2 * time.Millisecond) // a stream, not one burst: each leader works a while

	}

	deadline := time.Now().Add(60 * time.Second)
	for {
		diff := compareStateOf(t, store, "did:plc:failover", collection, want)
		if diff == "" {
			break
		}
		if time.Now().After(deadline) {
			var missing []string
			for rkey, n := range want {
				if _, err := store.GetRecord(ctx, "at://did:plc:failover/"+collection+"/"+rkey); err != nil {
					missing = append(missing, fmt.Sprintf("%s@%d", rkey, n))
				}
			}
			t.Logf("kills at %v; missing %v", killAt, missing)
			rows, _ := db.QueryContext(ctx, `SELECT instance, count(*), min(value), max(value) FROM cursor_writes GROUP BY instance ORDER BY min(seq)`)
			for rows.Next() {
				var inst string
				var n, lo, hi int64
				rows.Scan(&inst, &n, &lo, &hi)
				t.Logf("cursor writes by %s: %d, %d..%d", inst, n, lo, hi)
			}
			rows.Close()
			evs, _, _ := store.ListEvents(ctx, storage.EventFilter{Limit: 100})
			for _, e := range evs {
				t.Logf("event %s %s %s %s", e.CreatedAt.Format(time.TimeOnly), e.Type, e.Subject, e.Detail)
			}
			t.Fatalf("after %d events and %d kills the index differs: %s", events, kills, diff)
		}
		time.Sleep(100 * time.Millisecond)
	}
	slices.Sort(takeovers)
	for _, d := range takeovers {
		if d > 10*time.Second {
			t.Errorf("a takeover took %v, over 10 s", d)
		}
	}
	t.Logf("takeover after SIGKILL over %d kills: median %v, worst %v", len(takeovers),
		takeovers[len(takeovers)/2].Round(time.Millisecond), takeovers[len(takeovers)-1].Round(time.Millisecond))

	// One writer at a time, seen from the database.
	rows, err := db.QueryContext(ctx, `SELECT instance FROM cursor_writes ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var order []string
	done := map[string]bool{}
	for rows.Next() {
		var inst string
		if err := rows.Scan(&inst); err != nil {
			t.Fatal(err)
		}
		if len(order) > 0 && order[len(order)-1] != inst {
			done[order[len(order)-1]] = true
			if done[inst] {
				t.Fatalf("instance %s wrote the cursor again after %s took over (writers in order: %v)", inst, order[len(order)-1], append(order, inst))
			}
		}
		if len(order) == 0 || order[len(order)-1] != inst {
			order = append(order, inst)
		}
	}
	// The writers follow the leaders' order (a leader killed before its
	// first commit wrote nothing).
	rest := leaders
	for _, w := range order {
		i := slices.Index(rest, w)
		if i < 0 {
			t.Fatalf("cursor writers in order %v; leaders in order %v", order, leaders)
		}
		rest = rest[i+1:]
	}
	if order[len(order)-1] != current {
		t.Fatalf("the last cursor writer is %s, not the last leader %s", order[len(order)-1], current)
	}
}
