package jetstreamtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"
)

// Start starts a stand-in outside a test (benchmarks, tools). Stop it with
// Close.
func Start() *Server {
	s := &Server{wake: make(chan struct{}), cancels: map[int]context.CancelFunc{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = "ws" + strings.TrimPrefix(s.srv.URL, "http") + "/subscribe"
	return s
}

// Close drops every connection and stops a stand-in made with Start.
func (s *Server) Close() {
	s.DropAll()
	s.srv.Close()
}

// PublishRaw stores pre-encoded events in order and wakes the streaming
// connections once for all of them. It is Publish for bulk loads: no
// encoding, one lock and one wake-up per call.
//
// Each event's JSON must be a JSON object without "time_us"; its
// Collection is the commit's collection ("" for identity and account
// events) and its TimeUS is ignored. Each event is assigned the next
// time_us exactly as Publish does, and "time_us" is inserted as the first
// member of the stored object. PublishRaw does not retain the callers'
// byte slices. It returns the first and last time_us assigned (0, 0 when
// events is empty).
func (s *Server) PublishRaw(events []Event) (first, last int64) {
	if len(events) == 0 {
		return 0, 0
	}
	const prefixMax = len(`{"time_us":,`) + 20
	size := 0
	for _, e := range events {
		size += len(e.JSON) + prefixMax
	}
	buf := make([]byte, 0, size) // one allocation for the whole batch
	stored := make([]Event, len(events))

	s.mu.Lock()
	defer s.mu.Unlock()
	us := max(time.Now().UnixMicro(), s.lastUS+1)
	first = us
	for i, e := range events {
		start := len(buf)
		buf = append(buf, `{"time_us":`...)
		buf = strconv.AppendInt(buf, us, 10)
		body := e.JSON
		if len(body) > 0 && body[0] == '{' {
			body = body[1:]
		}
		if len(body) > 0 && body[0] != '}' {
			buf = append(buf, ',')
		}
		buf = append(buf, body...)
		stored[i] = Event{TimeUS: us, Collection: e.Collection, JSON: buf[start:len(buf):len(buf)]}
		last = us
		us++
	}
	s.lastUS = last
	s.events = append(s.events, stored...)
	close(s.wake)
	s.wake = make(chan struct{})
	return first, last
}

// Len is the number of stored events.
func (s *Server) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.events)
}
