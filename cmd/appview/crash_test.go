package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/internal/jetstreamtest"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// TestMain removes the binary that binary built.
func TestMain(m *testing.M) {
	code := m.Run()
	if builtBin != "" {
		os.RemoveAll(filepath.Dir(builtBin))
	}
	os.Exit(code)
}

// binary builds the appview command once per test process.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lexview-bin")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "appview")
		if out, err := exec.Command("go", "build", "-o", builtBin, ".").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// TestCrashLosesNothing plays a stream of creates, updates and deletes
// through the Jetstream stand-in while the ingesting process is killed with
// SIGKILL at random moments and restarted. At the end the index must hold
// exactly the state the stream describes.
func TestCrashLosesNothing(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs and kills the binary")
	}
	bin := binary(t)
	databases := map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "crash.db") },
		"postgres": func(t *testing.T) string { return storagetest.PostgresURL(t) },
	}
	for name, mk := range databases {
		t.Run(name, func(t *testing.T) { crashRun(t, bin, mk(t)) })
	}
}

func crashRun(t *testing.T, bin, dbURL string) {
	const collection = "app.test.crash"
	store := streamStore(t, dbURL, collection)

	js := jetstreamtest.New(t)
	start := func() *exec.Cmd {
		cmd := exec.Command(bin, "serve")
		cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "JETSTREAM_URL="+js.URL, "PORT=0", "LOG_LEVEL=error",
			"PLC_URL=http://127.0.0.1:1", "RELAY_URL=http://127.0.0.1:1", "TOKEN_ENCRYPTION_KEY=MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
		cmd.Dir = t.TempDir()
		if path := os.Getenv("LEXVIEW_CRASH_LOG"); path != "" {
			f, _ := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			cmd.Stderr = f
			cmd.Env = append(cmd.Env, "LOG_LEVEL=debug")
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	waitConnected := func() {
		deadline := time.Now().Add(20 * time.Second)
		for js.Connected() == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the service never subscribed")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	// Expected final state: rkey -> value n, absent when deleted.
	want := map[string]int{}
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	const events, keys = 2000, 250
	cmd := start()
	waitConnected()
	kills := map[int]bool{}
	for len(kills) < 3 {
		kills[200+rng.IntN(events-400)] = true
	}
	for i := range events {
		playEvent(js, rng, "did:plc:crash", collection, keys, i, want)
		if kills[i] {
			time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond)
			cmd.Process.Kill() // SIGKILL: no flush, no goodbye
			cmd.Wait()
			cmd = start()
			waitConnected()
		}
		if i%50 == 0 {
			time.Sleep(time.Millisecond) // a stream, not one burst
		}
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()

	// Wait for the index to converge on the expected state.
	deadline := time.Now().Add(60 * time.Second)
	for {
		diff := compareState(t, store, collection, want)
		if diff == "" {
			break
		}
		if time.Now().After(deadline) {
			for _, sub := range js.Subscriptions() {
				t.Logf("subscription cursor %d", sub.Cursor)
			}
			t.Fatalf("after %d events and 3 kills the index differs: %s", events, diff)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// streamStore opens and migrates the database at dbURL, closed when the
// test ends, and stores the record lexicon of collection (records with an
// integer n) without a backfill job.
func streamStore(t *testing.T, dbURL, collection string) storage.Store {
	t.Helper()
	ctx := context.Background()
	store, err := appview.OpenStore(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if err := store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	doc := `{"lexicon":1,"id":"` + collection + `","defs":{"main":{"type":"record","key":"any","record":{"type":"object","properties":{"n":{"type":"integer"}}}}}}`
	no := false
	if _, _, err := lexicon.NewRegistry(store).Put(ctx, lexicon.Upload{Document: json.RawMessage(doc), Backfill: &no}); err != nil {
		t.Fatal(err)
	}
	return store
}

// playEvent publishes event i of a random stream over keys record keys of
// did in collection: a create for a key not in want, else a delete (one
// time in three) or an update; want follows (record key: value n).
func playEvent(js *jetstreamtest.Server, rng *rand.Rand, did, collection string, keys, i int, want map[string]int) {
	rkey := fmt.Sprintf("k%03d", rng.IntN(keys))
	rev := fmt.Sprintf("3k%011d", i+1)
	_, exists := want[rkey]
	switch {
	case !exists:
		js.Commit(did, "create", collection, rkey, rev, testCID, map[string]any{"$type": collection, "n": i})
		want[rkey] = i
	case rng.IntN(3) == 0:
		js.Commit(did, "delete", collection, rkey, rev, "", nil)
		delete(want, rkey)
	default:
		js.Commit(did, "update", collection, rkey, rev, testCID, map[string]any{"$type": collection, "n": i})
		want[rkey] = i
	}
}

// compareState describes the first difference between the index and want.
func compareState(t *testing.T, store storage.Store, collection string, want map[string]int) string {
	return compareStateOf(t, store, "did:plc:crash", collection, want)
}

// compareStateOf describes the first difference between the records of
// did in collection and want (record key: value n).
func compareStateOf(t *testing.T, store storage.Store, did, collection string, want map[string]int) string {
	ctx := context.Background()
	n, err := store.CountRecords(ctx, collection)
	if err != nil {
		t.Fatal(err)
	}
	if int(n) != len(want) {
		return fmt.Sprintf("%d records indexed, %d expected", n, len(want))
	}
	for rkey, v := range want {
		rec, err := store.GetRecord(ctx, "at://"+did+"/"+collection+"/"+rkey)
		if errors.Is(err, storage.ErrNotFound) {
			return rkey + " missing"
		}
		if err != nil {
			t.Fatal(err)
		}
		var got struct{ N int }
		json.Unmarshal(rec.Value, &got)
		if got.N != v {
			return fmt.Sprintf("%s holds n=%d, want %d", rkey, got.N, v)
		}
	}
	return ""
}
