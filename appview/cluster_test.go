package appview_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/internal/jetstreamtest"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestThreeInstancesOnePostgres runs three App instances on one
// PostgreSQL database, each with its own connection pools. Exactly one
// leads and consumes the event source; a query lexicon uploaded through
// one instance is routable on the two others at once (LISTEN/NOTIFY);
// when the leader shuts down it hands over, and the stream is followed by
// one instance at a time throughout.
func TestThreeInstancesOnePostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := storagetest.PostgresURL(t)
	js := jetstreamtest.New(t)
	var envs []*testenv.Env
	for range 3 {
		store, err := appview.OpenStore(ctx, dbURL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		if err := store.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		envs = append(envs, testenv.New(t, store, appview.Config{Ingest: appview.IngestConfig{JetstreamURL: js.URL}}))
	}
	leaders := func() (n int, leader *testenv.Env) {
		for _, e := range envs {
			if e.App.Leading() {
				n, leader = n+1, e
			}
		}
		return n, leader
	}
	n, leader := leaders()
	if n != 1 || leader != envs[0] {
		t.Fatalf("%d leaders, want the first instance alone", n)
	}
	for _, e := range envs {
		r := e.Do(t, "GET", "/ready", nil)
		var ready struct {
			Status         string
			LeaderInstance string `json:"leader_instance"`
			Leader         bool
		}
		if err := json.Unmarshal(r.Raw, &ready); r.Status != http.StatusOK || err != nil {
			t.Fatalf("ready: %d %s", r.Status, r.Raw)
		}
		if ready.LeaderInstance != leader.App.InstanceID() || ready.Leader != (e == leader) {
			t.Fatalf("ready of %s: %s", e.App.InstanceID(), r.Raw)
		}
	}

	// A query uploaded through the last instance routes on the others.
	const nsid = "app.test.cluster.listThings"
	client, _ := envs[0].NewClient(t, apiclients.NewClient{})
	route := func(e *testenv.Env) int { return e.Do(t, "GET", "/xrpc/"+nsid, nil, "X-Client-Key", client.Key).Status }
	if s := route(envs[0]); s != http.StatusNotFound {
		t.Fatalf("before the upload: %d", s)
	}
	doc := `{"lexicon":1,"id":"` + nsid + `","defs":{"main":{"type":"query","output":{"encoding":"application/json"}}}}`
	uploaded := time.Now()
	if _, err := envs[2].App.Lexicons().Put(ctx, lexicon.Upload{Document: json.RawMessage(doc)}); err != nil {
		t.Fatal(err)
	}
	for _, e := range envs[:2] {
		for route(e) == http.StatusNotFound {
			if time.Since(uploaded) > 10*time.Second {
				t.Fatalf("%s never routed %s", e.App.InstanceID(), nsid)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	t.Logf("routable on both other instances %v after the upload", time.Since(uploaded).Round(time.Millisecond))

	// Hand-over: the leader shuts down (releasing its lease); another
	// takes over, and the stream never has two consumers.
	putNoteLexicon(t, envs[1].App)
	for js.Connected() == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	most := make(chan int)
	stop := make(chan struct{})
	go func() {
		m := 0
		for {
			select {
			case <-stop:
				most <- m
				return
			default:
			}
			m = max(m, js.Connected())
			time.Sleep(time.Millisecond)
		}
	}()
	if err := envs[0].App.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	handed := time.Now()
	envs = envs[1:]
	for {
		if n, _ := leaders(); n == 1 && js.Connected() == 1 {
			break
		}
		if time.Since(handed) > 15*time.Second {
			n, _ := leaders()
			t.Fatalf("%d leaders and %d subscriptions after the leader shut down", n, js.Connected())
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("handed over in %v", time.Since(handed).Round(time.Millisecond))
	close(stop)
	if m := <-most; m > 1 {
		t.Fatalf("%d subscriptions at once", m)
	}
}
