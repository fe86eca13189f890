// Package jetstreamtest is a Jetstream stand-in for tests and benchmarks: a
// WebSocket server on 127.0.0.1 that speaks Jetstream's JSON, honours
// wantedCollections and cursor (replaying stored events from the cursor,
// then streaming new ones live), and can drop its connections on demand.
package jetstreamtest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Event is one stored Jetstream event.
type Event struct {
	TimeUS     int64
	Collection string // "" for identity and account events
	JSON       []byte
}

// Subscription is what a client asked for when it connected.
type Subscription struct {
	Collections []string
	Cursor      int64 // 0 when live
}

// Server is the stand-in.
type Server struct {
	URL string // ws://127.0.0.1:PORT/subscribe

	srv     *httptest.Server
	mu      sync.Mutex
	events  []Event
	lastUS  int64
	wake    chan struct{} // closed and replaced on every publish
	subs    []Subscription
	cancels map[int]context.CancelFunc
	nextID  int
}

// New starts a stand-in; it stops when the test ends.
func New(t testing.TB) *Server {
	s := &Server{wake: make(chan struct{}), cancels: map[int]context.CancelFunc{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = "ws" + strings.TrimPrefix(s.srv.URL, "http") + "/subscribe"
	t.Cleanup(func() {
		s.DropAll()
		s.srv.Close()
	})
	return s
}

// Publish stores an event (assigning the next time_us) and streams it to
// matching connections. ev is encoded with "time_us" set.
func (s *Server) Publish(ev map[string]any) int64 {
	s.mu.Lock()
	us := max(time.Now().UnixMicro(), s.lastUS+1)
	s.lastUS = us
	ev["time_us"] = us
	raw, _ := json.Marshal(ev)
	coll := ""
	if c, ok := ev["commit"].(map[string]any); ok {
		coll, _ = c["collection"].(string)
	}
	s.events = append(s.events, Event{TimeUS: us, Collection: coll, JSON: raw})
	close(s.wake)
	s.wake = make(chan struct{})
	s.mu.Unlock()
	return us
}

// Commit publishes a commit event. record is ignored for deletes.
func (s *Server) Commit(did, op, collection, rkey, rev, cid string, record any) int64 {
	commit := map[string]any{"rev": rev, "operation": op, "collection": collection, "rkey": rkey}
	if op != "delete" {
		commit["record"], commit["cid"] = record, cid
	}
	return s.Publish(map[string]any{"did": did, "kind": "commit", "commit": commit})
}

// Subscriptions lists every connection's request, oldest first.
func (s *Server) Subscriptions() []Subscription {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.subs)
}

// Connected is the number of open connections.
func (s *Server) Connected() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.cancels)
}

// DropAll closes every open connection abruptly.
func (s *Server) DropAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, cancel := range s.cancels {
		cancel()
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/subscribe" {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	sub := Subscription{Collections: q["wantedCollections"]}
	if c := q.Get("cursor"); c != "" {
		sub.Cursor, _ = strconv.ParseInt(c, 10, 64)
	}
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer conn.CloseNow()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() { // notice the client closing
		for {
			if _, _, err := conn.Read(ctx); err != nil {
				cancel()
				return
			}
		}
	}()
	s.mu.Lock()
	s.subs = append(s.subs, sub)
	id := s.nextID
	s.nextID++
	s.cancels[id] = cancel
	next := len(s.events) // live by default
	if sub.Cursor > 0 {
		next, _ = slices.BinarySearchFunc(s.events, sub.Cursor, func(e Event, us int64) int {
			return cmpInt(e.TimeUS, us)
		})
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.cancels, id)
		s.mu.Unlock()
	}()
	for {
		s.mu.Lock()
		pending := slices.Clone(s.events[next:])
		wake := s.wake
		next = len(s.events)
		s.mu.Unlock()
		for _, e := range pending {
			if e.Collection != "" && len(sub.Collections) > 0 && !slices.Contains(sub.Collections, e.Collection) {
				continue
			}
			if err := conn.Write(ctx, websocket.MessageText, e.JSON); err != nil {
				return
			}
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return
		}
	}
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
