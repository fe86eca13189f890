package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/lexview/lexview/internal/netguard"
	"github.com/lexview/lexview/storage"
)

// Jetstream follows a Jetstream server's /subscribe endpoint. It asks for
// the wanted collections only, resubscribes when they change, and
// reconnects with capped, jittered exponential backoff, resuming from the
// last position it handed to the sink rewound by Rewind.
type Jetstream struct {
	// URL is the subscribe endpoint, e.g. wss://host/subscribe.
	URL string
	// HTTPClient dials the WebSocket; nil means a client that refuses private
	// and loopback addresses other than the URL's own host.
	HTTPClient *http.Client
	// Rewind is subtracted from the resume position so that nothing in
	// flight is missed (writes are idempotent); default 3s.
	Rewind time.Duration
	// ReplayWindow is how far back the server keeps events; a stored
	// cursor older than this starts from live instead. Default 24h.
	ReplayWindow time.Duration
	// MinBackoff and MaxBackoff bound reconnect delays; defaults 500ms, 30s.
	MinBackoff, MaxBackoff time.Duration
	// MaxMessageSize bounds one event; default 4 MiB.
	MaxMessageSize int64
	Logger         *slog.Logger
	Now            func() time.Time

	mu     sync.Mutex
	status Status
}

// JetstreamName is the Jetstream source's name: its cursor is stored
// under CursorKey(JetstreamName).
const JetstreamName = "jetstream"

// Name implements Source.
func (j *Jetstream) Name() string { return JetstreamName }

// Status implements Source.
func (j *Jetstream) Status() Status {
	j.mu.Lock()
	defer j.mu.Unlock()
	st := j.status
	st.Collections = slices.Clone(st.Collections)
	return st
}

func (j *Jetstream) setConnected(up bool, collections []string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.status.Connected = up
	if up {
		j.status.Collections = collections
		j.status.Connections++
	}
}

func (j *Jetstream) noteEvent(position int64, at time.Time) {
	j.mu.Lock()
	j.status.Cursor, j.status.LastEventAt = position, at
	j.status.Events++
	j.mu.Unlock()
}

// event is a Jetstream message.
type event struct {
	DID    string `json:"did"`
	TimeUS int64  `json:"time_us"`
	Kind   string `json:"kind"`
	Commit *struct {
		Rev        string          `json:"rev"`
		Operation  string          `json:"operation"`
		Collection string          `json:"collection"`
		RKey       string          `json:"rkey"`
		Record     json.RawMessage `json:"record"`
		CID        string          `json:"cid"`
	} `json:"commit"`
	Identity *struct {
		Handle string `json:"handle"`
	} `json:"identity"`
	Account *struct {
		Active bool   `json:"active"`
		Status string `json:"status"`
	} `json:"account"`
}

func (j *Jetstream) defaults() {
	if j.Rewind <= 0 {
		j.Rewind = 3 * time.Second
	}
	if j.ReplayWindow <= 0 {
		j.ReplayWindow = 24 * time.Hour
	}
	if j.MinBackoff <= 0 {
		j.MinBackoff = 500 * time.Millisecond
	}
	if j.MaxBackoff <= 0 {
		j.MaxBackoff = 30 * time.Second
	}
	if j.MaxMessageSize <= 0 {
		j.MaxMessageSize = 4 << 20
	}
	if j.Logger == nil {
		j.Logger = slog.Default()
	}
	if j.Now == nil {
		j.Now = time.Now
	}
	if j.HTTPClient == nil {
		// The operator chose the URL; its host may be on a private network.
		j.HTTPClient = netguard.NewClient(netguard.Options{AllowHosts: []string{netguard.HostOf(j.URL)}}, 0)
	}
}

// errResubscribe ends a connection whose collection set changed.
var errResubscribe = errors.New("wanted collections changed")

// Run implements Source.
func (j *Jetstream) Run(ctx context.Context, wanted func() []string, changed <-chan struct{}, sink Sink) error {
	j.defaults()
	var position int64 // last time_us handed to the sink; 0 = none yet
	if c, ok, err := sink.Resume(ctx); err != nil {
		return fmt.Errorf("jetstream: read stored cursor: %w", err)
	} else if ok {
		age := j.Now().Sub(time.UnixMicro(c))
		if age > j.ReplayWindow {
			j.Logger.Warn("stored Jetstream cursor is older than the replay window; starting from live",
				"cursor", c, "age", age.Round(time.Second).String())
		} else {
			position = c
		}
	}
	backoff := j.MinBackoff
	for ctx.Err() == nil {
		collections := wanted()
		if len(collections) == 0 {
			// Without wantedCollections Jetstream sends everything: wait.
			select {
			case <-changed:
				continue
			case <-ctx.Done():
				return nil
			}
		}
		if position == 0 {
			// Starting from live: store the starting point first, so that a
			// crash before the first commit resumes here instead of from live
			// again (which would skip what arrived in between).
			position = j.Now().UnixMicro()
			if err := sink.Records(ctx, nil, position); err != nil {
				return nil // ctx ended
			}
		}
		started := j.Now()
		err := j.connect(ctx, collections, &position, wanted, changed, sink)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, errResubscribe) {
			backoff = j.MinBackoff
			continue // reconnect at once with the new set
		}
		if j.Now().Sub(started) > time.Minute {
			backoff = j.MinBackoff // the connection was healthy for a while
		}
		wait := jitter(backoff)
		j.Logger.Warn("Jetstream connection lost; reconnecting", "err", err, "retry_in", wait.Round(time.Millisecond).String())
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil
		}
		backoff = min(backoff*2, j.MaxBackoff)
	}
	return nil
}

// jitter spreads d by ±20%.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// subscribeURL builds the subscribe URL for collections from position.
func (j *Jetstream) subscribeURL(collections []string, position int64) (string, error) {
	u, err := url.Parse(j.URL)
	if err != nil {
		return "", fmt.Errorf("jetstream URL: %w", err)
	}
	q := u.Query()
	q.Del("wantedCollections")
	for _, c := range collections {
		q.Add("wantedCollections", c)
	}
	q.Del("cursor")
	if position > 0 {
		q.Set("cursor", strconv.FormatInt(position-j.Rewind.Microseconds(), 10))
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// connect runs one connection until it fails, ctx ends, or the wanted set
// changes.
func (j *Jetstream) connect(ctx context.Context, collections []string, position *int64, wanted func() []string,
	changed <-chan struct{}, sink Sink) error {
	target, err := j.subscribeURL(collections, *position)
	if err != nil {
		return err
	}
	dialCtx, cancelDial := context.WithTimeout(ctx, 15*time.Second)
	conn, _, err := websocket.Dial(dialCtx, target, &websocket.DialOptions{HTTPClient: j.HTTPClient})
	cancelDial()
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(j.MaxMessageSize)
	j.setConnected(true, collections)
	detail := map[string]any{"url": j.URL, "collections": collections, "cursor": *position}
	sink.StateChanged(ctx, true, detail)
	j.Logger.Info("connected to Jetstream", "collections", collections, "cursor", *position)

	connCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		for {
			select {
			case <-changed:
				if !slices.Equal(wanted(), collections) {
					cancel(errResubscribe)
					return
				}
			case <-connCtx.Done():
				return
			}
		}
	}()
	err = j.read(connCtx, conn, collections, position, sink)
	if cause := context.Cause(connCtx); errors.Is(cause, errResubscribe) {
		err = errResubscribe
		conn.Close(websocket.StatusNormalClosure, "resubscribing")
	}
	j.setConnected(false, nil)
	sink.StateChanged(context.WithoutCancel(ctx), false, map[string]any{"url": j.URL, "cursor": *position, "reason": errString(err)})
	return err
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// read handles messages until the connection ends.
func (j *Jetstream) read(ctx context.Context, conn *websocket.Conn, collections []string, position *int64, sink Sink) error {
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		var ev event
		if err := json.Unmarshal(data, &ev); err != nil {
			j.Logger.Warn("undecodable Jetstream message skipped", "err", err, "bytes", len(data))
			continue
		}
		received := j.Now()
		switch ev.Kind {
		case "commit":
			c := ev.Commit
			if c == nil || !slices.Contains(collections, c.Collection) {
				break
			}
			change := storage.Change{
				Op: storage.ChangeOp(c.Operation), DID: ev.DID, Collection: c.Collection, RKey: c.RKey,
				CID: c.CID, Rev: c.Rev, Record: c.Record, Received: received,
			}
			if change.Op == storage.OpDelete {
				change.Record, change.CID = nil, ""
			}
			if err := sink.Records(ctx, []storage.Change{change}, ev.TimeUS); err != nil {
				return fmt.Errorf("hand over records: %w", err)
			}
		case "identity":
			if ev.Identity != nil {
				sink.Identity(ctx, IdentityEvent{DID: ev.DID, Handle: ev.Identity.Handle})
			}
		case "account":
			if ev.Account != nil {
				sink.Account(ctx, AccountEvent{DID: ev.DID, Active: ev.Account.Active, Status: ev.Account.Status})
			}
		}
		if ev.TimeUS > *position {
			*position = ev.TimeUS
		}
		j.noteEvent(*position, received)
	}
}
