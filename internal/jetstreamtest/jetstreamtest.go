// Package jetstreamtest is a Jetstream stand-in for tests and benchmarks: a
// WebSocket server on 127.0.0.1 that speaks Jetstream's JSON, honours
// wantedCollections and cursor (replaying stored events from the cursor,
// then streaming new ones live), and can drop its connections on demand.
package jetstreamtest

import (
	"context"
	"encoding/json"
	"maps"
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
// matching connections. ev is encoded with "time_us" set, its fields in
// Jetstream's order: did, time_us, kind, then the others.
func (s *Server) Publish(ev map[string]any) int64 {
	coll := ""
	switch c := ev["commit"].(type) {
	case map[string]any:
		coll, _ = c["collection"].(string)
	case commit:
		coll = c.Collection
	}
	return s.PublishBytes(coll, func(us int64) []byte {
		ev["time_us"] = us
		return encode(ev)
	})
}

// encode writes ev as a JSON object with did, time_us and kind first, as
// Jetstream does, and the other fields after them in key order.
func encode(ev map[string]any) []byte {
	first := []string{"did", "time_us", "kind"}
	keys := slices.Sorted(maps.Keys(ev))
	keys = slices.DeleteFunc(keys, func(k string) bool { return slices.Contains(first, k) })
	buf := []byte{'{'}
	for _, k := range append(first, keys...) {
		v, ok := ev[k]
		if !ok {
			continue
		}
		if len(buf) > 1 {
			buf = append(buf, ',')
		}
		kb, _ := json.Marshal(k)
		vb, _ := json.Marshal(v)
		buf = append(append(append(buf, kb...), ':'), vb...)
	}
	return append(buf, '}')
}

// PublishBytes stores the message build makes as it is (build receives
// the time_us assigned to it, for ordering and cursors) and streams it to
// connections that want collection ("" goes to every connection): for
// messages Publish cannot make, such as malformed or non-UTF-8 ones.
func (s *Server) PublishBytes(collection string, build func(timeUS int64) []byte) int64 {
	s.mu.Lock()
	us := max(time.Now().UnixMicro(), s.lastUS+1)
	s.lastUS = us
	s.events = append(s.events, Event{TimeUS: us, Collection: collection, JSON: build(us)})
	close(s.wake)
	s.wake = make(chan struct{})
	s.mu.Unlock()
	return us
}

// commit is a commit event's commit, its fields in Jetstream's order.
type commit struct {
	Rev        string `json:"rev"`
	Operation  string `json:"operation"`
	Collection string `json:"collection"`
	RKey       string `json:"rkey"`
	Record     any    `json:"record,omitempty"`
	CID        string `json:"cid,omitempty"`
}

// Commit publishes a commit event. record is ignored for deletes.
func (s *Server) Commit(did, op, collection, rkey, rev, cid string, record any) int64 {
	c := commit{Rev: rev, Operation: op, Collection: collection, RKey: rkey}
	if op != "delete" {
		c.Record, c.CID = record, cid
	}
	return s.Publish(map[string]any{"did": did, "kind": "commit", "commit": c})
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
