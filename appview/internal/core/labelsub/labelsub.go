// Package labelsub subscribes to labelers' label streams
// (com.atproto.label.subscribeLabels): one subscription per active
// labeler, each resolving the labeler's DID to its #atproto_labeler
// endpoint and #atproto_label key, reading the event stream from the
// stored cursor, verifying every label's signature and storing the labels
// of each event with the event's sequence number as the new cursor.
//
// A Manager keeps the subscriptions in line with the store: at start, when
// told a labeler changed (Changed), and every Options.Reconcile. A
// subscription's failures (an unresolvable DID, a refused connection, a
// broken frame, a store error) end only its own connection, which it opens
// again after a capped, jittered backoff; they never reach another
// labeler's subscription.
package labelsub

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bluesky-social/indigo/atproto/identity"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/metrics"
	"github.com/lexview/lexview/internal/netguard"
	"github.com/lexview/lexview/storage"
)

// Defaults of the Options' limits.
const (
	DefaultReconcile = 30 * time.Second
	DefaultMaxFrame  = 1 << 20 // bytes
	// MinMaxFrame and MaxMaxFrame bound what MaxFrameSetting may set.
	MinMaxFrame        = 64 << 10
	MaxMaxFrame        = 64 << 20
	DefaultMinBackoff  = time.Second
	DefaultMaxBackoff  = 5 * time.Minute
	DefaultMaxFuture   = 5 * time.Minute
	DefaultEventEvery  = time.Minute
	DefaultDialTimeout = 30 * time.Second
	DefaultPing        = 30 * time.Second
)

// Store is the persistence the subscriptions need.
type Store interface {
	ListLabelers(ctx context.Context) ([]storage.Labeler, error)
	GetLabeler(ctx context.Context, did string) (storage.Labeler, error)
	ApplyLabels(ctx context.Context, b storage.LabelBatch) error
}

// Hook is told about the checked labels of each event (the refused ones
// left out; never an empty list), in stream order, before they are stored
// (label-arrival scripts). Delivery is at least once: an event whose
// storing then fails (a store error, a stop) is replayed from the stored
// cursor on the next connection and handed to the hook again. The hook
// runs on the labeler's subscription, which waits for it.
type Hook interface {
	LabelsArrived(ctx context.Context, labeler string, labels []storage.Label)
}

// Events records entries in the event log (an *eventlog.Log).
type Events interface {
	Record(ctx context.Context, e eventlog.Entry)
}

// Options configures a Manager. Store and Directory are required; the rest
// has defaults.
type Options struct {
	Store     Store
	Directory identity.Directory
	// HTTPClient dials the labelers (its Timeout bounds the handshake
	// only); default a guarded client (internal/netguard: labeler
	// endpoints come from DID documents, so no private or loopback
	// addresses).
	HTTPClient *http.Client
	// AllowHTTP accepts labeler endpoints over plain http (ws://); only
	// https (wss://) otherwise.
	AllowHTTP bool
	Hook      Hook             // optional
	Events    Events           // optional
	Metrics   *metrics.Metrics // optional
	Logger    *slog.Logger     // default slog.Default()
	Now       func() time.Time // default time.Now

	// Reconcile is how often the subscriptions are compared with the
	// store (changes made through another instance); default
	// DefaultReconcile.
	Reconcile time.Duration
	// MaxFrame is the largest frame kept, in bytes: a larger one is
	// skipped (read to its end and dropped, counted, logged and recorded
	// in the event log), and the cursor moves past it. Default
	// DefaultMaxFrame; the setting MaxFrameSetting overrides it
	// (Manager.SetMaxFrame).
	MaxFrame int64
	// maxFrame is the override SetMaxFrame sets, shared by the
	// subscriptions (0: MaxFrame).
	maxFrame *atomic.Int64
	// MinBackoff and MaxBackoff bound the wait before reconnecting: it
	// doubles from MinBackoff after each failed connection up to
	// MaxBackoff, with up to half of it added at random. Defaults
	// DefaultMinBackoff and DefaultMaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	// MaxFuture is how far in the future a label's cts may be; later ones
	// are refused. Default DefaultMaxFuture.
	MaxFuture time.Duration
	// Ping is how often an idle connection is pinged, and how long the
	// pong may take before the connection is closed (and opened again).
	// Default DefaultPing.
	Ping time.Duration
	// EventEvery is the least time between two event-log entries of the
	// same type for the same labeler; the ones in between are counted in
	// the next. Default DefaultEventEvery.
	EventEvery time.Duration
}

func (c Options) withDefaults() Options {
	if c.HTTPClient == nil {
		c.HTTPClient = netguard.NewClient(netguard.Options{}, 0)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	setDefault(&c.Reconcile, DefaultReconcile)
	setDefault(&c.MinBackoff, DefaultMinBackoff)
	setDefault(&c.MaxBackoff, DefaultMaxBackoff)
	setDefault(&c.MaxFuture, DefaultMaxFuture)
	setDefault(&c.EventEvery, DefaultEventEvery)
	setDefault(&c.Ping, DefaultPing)
	if c.MaxFrame <= 0 {
		c.MaxFrame = DefaultMaxFrame
	}
	if c.maxFrame == nil {
		c.maxFrame = new(atomic.Int64)
	}
	return c
}

func setDefault(d *time.Duration, v time.Duration) {
	if *d <= 0 {
		*d = v
	}
}

// Manager runs one subscription per active labeler.
type Manager struct {
	cfg     Options
	changed chan struct{}

	mu      sync.Mutex
	pending map[string]bool          // labelers changed since the last reconcile
	subs    map[string]*subscription // running, by DID
	// reports are the labelers' event-log reporters, kept across their
	// subscriptions' restarts so that the rate limits hold.
	reports map[string]*reporter
}

// New returns a Manager; nothing runs before Run.
func New(cfg Options) *Manager {
	return &Manager{
		cfg: cfg.withDefaults(), changed: make(chan struct{}, 1),
		pending: map[string]bool{}, subs: map[string]*subscription{}, reports: map[string]*reporter{},
	}
}

// MaxFrameSetting is the setting that raises (or lowers) the largest
// labeler frame kept, in bytes, from MinMaxFrame to MaxMaxFrame; without
// it, Options.MaxFrame applies. It is read when a connection opens.
const MaxFrameSetting = "labeler.max_frame_bytes"

// SetMaxFrame sets the largest frame kept on connections opened from now
// on; n <= 0 goes back to Options.MaxFrame.
func (m *Manager) SetMaxFrame(n int64) { m.cfg.maxFrame.Store(max(n, 0)) }

// frameLimit is the largest frame kept now.
func (c Options) frameLimit() int64 {
	if n := c.maxFrame.Load(); n > 0 {
		return n
	}
	return c.MaxFrame
}

// Changed tells the Manager that a labeler was added, had its status
// changed or was deleted: its subscription is stopped if it runs and, if
// the labeler is active, started again from the stored cursor. It never
// blocks; the work happens in Run.
func (m *Manager) Changed(did string) {
	m.mu.Lock()
	m.pending[did] = true
	m.mu.Unlock()
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

// Run keeps the subscriptions in line with the store until ctx ends, then
// stops them all and returns once they have ended.
func (m *Manager) Run(ctx context.Context) {
	defer m.stopAll()
	tick := time.NewTicker(m.cfg.Reconcile)
	defer tick.Stop()
	for {
		m.reconcile(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-m.changed:
		}
	}
}

// reconcile stops the subscriptions of changed labelers and of those no
// longer active, and starts one for every active labeler without one.
func (m *Manager) reconcile(ctx context.Context) {
	m.mu.Lock()
	pending := m.pending
	m.pending = map[string]bool{}
	m.mu.Unlock()
	for did := range pending {
		m.stop(did)
	}
	labelers, err := m.cfg.Store.ListLabelers(ctx)
	if err != nil {
		if ctx.Err() == nil {
			m.cfg.Logger.Warn("listing labelers failed; subscriptions unchanged until the next attempt", "err", err)
		}
		return
	}
	active := map[string]bool{}
	for _, l := range labelers {
		if l.Status == storage.LabelerActive {
			active[l.DID] = true
		}
	}
	m.mu.Lock()
	var gone []string
	for did, s := range m.subs {
		if !active[did] || s.ended() {
			gone = append(gone, did)
		}
	}
	m.mu.Unlock()
	for _, did := range gone {
		m.stop(did)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for did := range m.reports {
		if !active[did] {
			delete(m.reports, did)
		}
	}
	for did := range active {
		if _, ok := m.subs[did]; !ok {
			r := m.reports[did]
			if r == nil {
				r = newReporter(m.cfg, did)
				m.reports[did] = r
			}
			m.subs[did] = startSubscription(ctx, m.cfg, did, r)
		}
	}
}

// stop ends the subscription of did, if one runs, and waits for it.
func (m *Manager) stop(did string) {
	m.mu.Lock()
	s := m.subs[did]
	delete(m.subs, did)
	m.mu.Unlock()
	if s != nil {
		s.stop()
	}
}

func (m *Manager) stopAll() {
	m.mu.Lock()
	subs := m.subs
	m.subs = map[string]*subscription{}
	m.mu.Unlock()
	for _, s := range subs {
		s.cancel()
	}
	for _, s := range subs {
		<-s.done
	}
}

// Running lists the labelers whose subscription runs, for tests and
// status pages.
func (m *Manager) Running() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for did, s := range m.subs {
		if !s.ended() {
			out = append(out, did)
		}
	}
	return out
}

// errGone ends a subscription whose labeler was deleted or paused.
var errGone = errors.New("labeler no longer active")
