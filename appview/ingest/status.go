package ingest

import (
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/lexview/lexview/internal/textclip"
)

// Connection states of a source (Status.State).
const (
	// StateIdle: not connected because no collection is wanted.
	StateIdle = "idle"
	// StateConnecting: dialing the host.
	StateConnecting = "connecting"
	// StateConnected: reading the stream.
	StateConnected = "connected"
	// StateWaiting: the connection failed or ended; waiting to dial again.
	StateWaiting = "waiting"
)

// Status is a snapshot of a Source's state.
type Status struct {
	Connected bool `json:"connected"`
	// State is the connection's state: idle, connecting, connected or
	// waiting (see the State constants).
	State string `json:"state"`
	// Host is the host (and port) the source connects to.
	Host        string    `json:"host"`
	Collections []string  `json:"collections"`
	Cursor      int64     `json:"cursor"`                 // last stream position handed over
	LastEventAt time.Time `json:"last_event_at,omitzero"` // arrival of the last event
	// EventTime is the stream's own timestamp of the last event handed
	// over: a firehose event's "time", a Jetstream event's time_us.
	EventTime time.Time `json:"event_time,omitzero"`
	// Lag is how far behind the head of the stream the source is, in
	// seconds: the time from EventTime to now while events arrive, and
	// while connected and quiet the time from EventTime to the arrival of
	// that event (a quiet stream is not a late one). 0 before any event.
	Lag         float64 `json:"lag_seconds"`
	Events      int64   `json:"events_received"`  // events read since start
	Connections int64   `json:"connections_made"` // since start
	// LastError is why the last connection failed or ended (its dial or
	// read error, bounded to maxErrorLen bytes); empty before any
	// failure. It stays after a reconnection: LastErrorAt says when.
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
	// RetryAt is when a waiting source dials again; zero in other states.
	RetryAt time.Time `json:"retry_at,omitzero"`
	// Verification holds a verified source's counts (the firehose's);
	// nil for other sources.
	Verification *FirehoseCounts `json:"verification,omitempty"`
}

// maxErrorLen bounds Status.LastError: a failed handshake's error may
// quote the server's answer.
const maxErrorLen = 300

// quietAfter is how long after the last event a connected source counts as
// quiet (caught up) rather than late.
const quietAfter = 5 * time.Second

// tracker keeps a source's Status; safe for concurrent use.
type tracker struct {
	mu sync.Mutex
	st Status
}

// snapshot returns the status as of now, with Lag computed.
func (t *tracker) snapshot(now time.Time) Status {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.st
	st.Collections = slices.Clone(st.Collections)
	if st.State == "" {
		st.State = StateIdle
	}
	if !st.EventTime.IsZero() {
		lag := now.Sub(st.EventTime)
		if st.Connected && now.Sub(st.LastEventAt) > quietAfter {
			lag = st.LastEventAt.Sub(st.EventTime)
		}
		st.Lag = max(0, lag.Seconds())
	}
	return st
}

// state records a connection state change to the host of rawURL. On
// StateConnected, collections (when not nil) replace the followed ones and
// position (when greater) the cursor: the status shows the position the
// source resumed from until events move it.
func (t *tracker) state(state, rawURL string, collections []string, position int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.st.State = state
	t.st.Connected = state == StateConnected
	t.st.RetryAt = time.Time{}
	if u, err := url.Parse(rawURL); err == nil && u.Host != "" {
		t.st.Host = u.Host
	}
	if state == StateConnected {
		t.st.Connections++
		if collections != nil {
			t.st.Collections = collections
		}
		t.st.Cursor = max(t.st.Cursor, position)
	}
}

// failed records why a connection failed or ended, at when, and that the
// source dials again at retry.
func (t *tracker) failed(err error, at, retry time.Time) {
	msg := "the connection ended"
	if err != nil {
		msg = err.Error()
	}
	t.mu.Lock()
	t.st.LastError, t.st.LastErrorAt, t.st.RetryAt = textclip.Clip(msg, maxErrorLen), at, retry
	t.mu.Unlock()
}

// collections records the followed collections.
func (t *tracker) collections(cols []string) {
	t.mu.Lock()
	t.st.Collections = cols
	t.mu.Unlock()
}

// event records an event handed over at position, which arrived at
// received and which the stream dated at (zero when it had no time).
func (t *tracker) event(position int64, received, at time.Time) {
	t.mu.Lock()
	t.st.Cursor, t.st.LastEventAt = position, received
	if !at.IsZero() {
		t.st.EventTime = at
	}
	t.st.Events++
	t.mu.Unlock()
}
