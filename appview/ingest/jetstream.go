package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/lexview/lexview/internal/netguard"
)

// Jetstream follows a Jetstream server's /subscribe endpoint. It asks for
// the wanted collections only, resubscribes when they change, and
// reconnects with capped, jittered exponential backoff, resuming from the
// last position it handed to the sink rewound by Rewind.
//
// An event it cannot use (larger than MaxMessageSize, not JSON, or not of
// Jetstream's shape) is skipped: reported to the sink (Sink.Skipped), and
// its position, when it can be read, stored (Sink.Records without
// changes), so that ingestion goes on past it.
type Jetstream struct {
	// URL is the subscribe endpoint, e.g. wss://host/subscribe.
	URL string
	// HTTPClient dials the WebSocket; nil means a client that refuses private
	// and loopback addresses other than the URL's own origin.
	HTTPClient *http.Client
	// Rewind is subtracted from the resume position so that nothing in
	// flight is missed (writes are idempotent); default 3s.
	Rewind time.Duration
	// ReplayWindow is how far back the server keeps events; a stored
	// cursor older than this starts from live instead. Default 24h.
	ReplayWindow time.Duration
	// MinBackoff and MaxBackoff bound reconnect delays; defaults 500ms, 30s.
	MinBackoff, MaxBackoff time.Duration
	// MaxMessageSize bounds the events decoded; default 4 MiB. A larger
	// event is read through without being kept, and skipped.
	MaxMessageSize int64
	// MaxSkipSize bounds the bytes read of an event skipped for its size;
	// default 64 MiB (at least MaxMessageSize). An event larger still ends
	// the connection; the next one resumes just past it (its position is
	// read from the start of the event), without the rewind.
	MaxSkipSize int64
	Logger      *slog.Logger
	Now         func() time.Time

	status tracker
}

// JetstreamName is the Jetstream source's name: its cursor is stored
// under CursorKey(JetstreamName).
const JetstreamName = "jetstream"

// Name implements Source.
func (j *Jetstream) Name() string { return JetstreamName }

// Status implements Source.
func (j *Jetstream) Status() Status { return j.status.snapshot(j.now()) }

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
	if j.MaxSkipSize <= 0 {
		j.MaxSkipSize = 64 << 20
	}
	j.MaxSkipSize = max(j.MaxSkipSize, j.MaxMessageSize)
	if j.Logger == nil {
		j.Logger = slog.Default()
	}
	if j.HTTPClient == nil {
		// The operator chose the URL; its host may be on a private network.
		j.HTTPClient = netguard.NewClient(netguard.Options{AllowOrigins: []string{j.URL}}, 0)
	}
}

// errResubscribe ends a connection whose collection set changed.
var errResubscribe = errors.New("wanted collections changed")

// Run implements Source.
func (j *Jetstream) Run(ctx context.Context, wanted func() []string, changed <-chan struct{}, sink Sink) error {
	j.defaults()
	var pos position
	if c, ok, err := sink.Resume(ctx); err != nil {
		return fmt.Errorf("jetstream: read stored cursor: %w", err)
	} else if ok {
		age := j.now().Sub(time.UnixMicro(c))
		if age > j.ReplayWindow {
			j.Logger.Warn("stored Jetstream cursor is older than the replay window; starting from live",
				"cursor", c, "age", age.Round(time.Second).String())
		} else {
			pos.last = c
		}
	}
	backoff := j.MinBackoff
	for ctx.Err() == nil {
		collections := wanted()
		if len(collections) == 0 {
			// Without wantedCollections Jetstream sends everything: wait.
			j.status.state(StateIdle, j.URL, []string{}, 0)
			select {
			case <-changed:
				continue
			case <-ctx.Done():
				return nil
			}
		}
		if pos.last == 0 {
			// Starting from live: store the starting point first, so that a
			// crash before the first commit resumes here instead of from live
			// again (which would skip what arrived in between).
			pos.last = j.now().UnixMicro()
			if err := markPosition(ctx, sink, pos.last); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				pos.last = 0
				j.Logger.Warn("storing Jetstream's starting position failed; retrying", "err", err)
				select {
				case <-time.After(jitter(backoff)):
				case <-ctx.Done():
					return nil
				}
				backoff = min(backoff*2, j.MaxBackoff)
				continue
			}
		}
		started := j.now()
		err := j.connect(ctx, collections, &pos, wanted, changed, sink)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, errResubscribe) || errors.Is(err, errSkippedPast) {
			backoff = j.MinBackoff
			continue // reconnect at once: with the new set, or past the event
		}
		if j.now().Sub(started) > time.Minute {
			backoff = j.MinBackoff // the connection was healthy for a while
		}
		wait := jitter(backoff)
		now := j.now()
		j.status.failed(err, now, now.Add(wait))
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

// position is where a Jetstream source is in the stream.
type position struct {
	// last is the last time_us handed to the sink (0: none yet).
	last int64
	// skippedPast is the time_us of the last event too large to be read
	// through (0: none): connections resume after it.
	skippedPast int64
}

// resumeFrom is the cursor to subscribe from: the last position rewound
// by Rewind, but never at or before an event too large to read through;
// 0 (live) before any position.
func (j *Jetstream) resumeFrom(p position) int64 {
	if p.last <= 0 {
		return 0
	}
	from := p.last - j.Rewind.Microseconds()
	if p.skippedPast > 0 {
		from = max(from, p.skippedPast+1)
	}
	return from
}

// urlHint explains a failed handshake with a URL that lacks Jetstream's
// endpoint path (a common slip: wss://host instead of wss://host/subscribe).
func (j *Jetstream) urlHint() string {
	if u, err := url.Parse(j.URL); err == nil && !strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/subscribe") {
		return " (Jetstream serves its stream at /subscribe: is the URL missing that path?)"
	}
	return ""
}

// subscribeURL builds the subscribe URL for collections from cursor (0:
// live).
func (j *Jetstream) subscribeURL(collections []string, cursor int64) (string, error) {
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
	if cursor > 0 {
		q.Set("cursor", strconv.FormatInt(cursor, 10))
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// connect runs one connection until it fails, ctx ends, or the wanted set
// changes.
func (j *Jetstream) connect(ctx context.Context, collections []string, pos *position, wanted func() []string,
	changed <-chan struct{}, sink Sink) error {
	target, err := j.subscribeURL(collections, j.resumeFrom(*pos))
	if err != nil {
		return err
	}
	j.status.state(StateConnecting, j.URL, nil, 0)
	dialCtx, cancelDial := context.WithTimeout(ctx, 15*time.Second)
	conn, _, err := websocket.Dial(dialCtx, target, &websocket.DialOptions{HTTPClient: j.HTTPClient})
	cancelDial()
	if err != nil {
		j.status.state(StateWaiting, j.URL, nil, 0)
		return fmt.Errorf("dial: %w%s", err, j.urlHint())
	}
	defer conn.CloseNow()
	conn.SetReadLimit(j.MaxSkipSize) // read enforces MaxMessageSize itself
	j.status.state(StateConnected, j.URL, collections, pos.last)
	detail := map[string]any{"url": j.URL, "collections": collections, "cursor": pos.last}
	sink.StateChanged(ctx, true, detail)
	j.Logger.Info("connected to Jetstream", "collections", collections, "cursor", pos.last)

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
	err = j.read(connCtx, conn, collections, pos, sink)
	if cause := context.Cause(connCtx); errors.Is(cause, errResubscribe) {
		err = errResubscribe
		conn.Close(websocket.StatusNormalClosure, "resubscribing")
	}
	j.status.state(StateWaiting, j.URL, nil, 0)
	sink.StateChanged(context.WithoutCancel(ctx), false, map[string]any{"url": j.URL, "cursor": pos.last, "reason": errString(err)})
	return err
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// now reads Now, or the system clock when Now is nil. Run leaves Now as
// it is: Status may be read meanwhile, from the start (the instance's
// history samples every source).
func (j *Jetstream) now() time.Time { return clock(j.Now) }

// clock reads now, or the system clock when it is nil.
func clock(now func() time.Time) time.Time {
	if now == nil {
		return time.Now()
	}
	return now()
}
