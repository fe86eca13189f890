package labelsub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	comatproto "github.com/bluesky-social/indigo/api/atproto"
	"github.com/bluesky-social/indigo/atproto/labeling"
	"github.com/coder/websocket"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/storage"
)

// pipelineDepth is how many checked events wait for the store while the
// next ones are read and verified: it bounds memory to about that many
// frames, and a labeler that floods is read at the pace the store takes.
const pipelineDepth = 8

// errGap ends a connection that skipped sequence numbers.
var errGap = errors.New("sequence gap")

// stream is one connection to a labeler: a reader goroutine decodes and
// checks frames while the caller's goroutine stores them in order.
type stream struct {
	sub    *subscription
	keyMu  sync.RWMutex // guards target.key, which verifiers may refresh
	target target
	cursor int64 // the last stored sequence number
	stored int   // events stored on this connection
	// lastRead is when the last frame was read, in Unix nanoseconds.
	lastRead atomic.Int64
}

// checked is an event verified and ready to store.
type checked struct {
	seq    int64
	labels []storage.Label
	newest time.Time // the latest cts among labels
}

// run connects and stores events until the connection ends or ctx ends.
func (st *stream) run(ctx context.Context) error {
	s := st.sub
	u := st.target.endpoint + "?cursor=" + strconv.FormatInt(st.cursor, 10)
	dctx, cancel := context.WithTimeout(ctx, DefaultDialTimeout)
	conn, _, err := websocket.Dial(dctx, u, &websocket.DialOptions{HTTPClient: s.cfg.HTTPClient})
	cancel()
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", st.target.endpoint, err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(-1) // read limits itself, to tell oversized frames apart
	s.setState(stateConnected)
	s.report.record(ctx, "labeler.connected", eventlog.Info, map[string]any{"endpoint": st.target.endpoint, "cursor": st.cursor})

	rctx, rcancel := context.WithCancel(ctx)
	defer rcancel()
	// The reader decodes frames and hands each event to the verifiers
	// (jobs) and, in stream order, to this goroutine (ordered), which
	// stores each once verified.
	jobs := make(chan *job, pipelineDepth)
	ordered := make(chan *job, pipelineDepth)
	readErr := make(chan error, 1)
	var verifiers sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), maxVerifiers) {
		verifiers.Go(func() {
			for j := range jobs {
				j.ev = st.check(rctx, j.evt)
				close(j.done)
			}
		})
	}
	go st.keepAlive(rctx, conn, ordered)
	go func() {
		readErr <- st.read(rctx, conn, jobs, ordered)
		close(jobs)
		close(ordered)
	}()
	for j := range ordered {
		<-j.done
		batch := st.coalesce(j, ordered)
		if err = st.apply(ctx, batch); err != nil {
			rcancel()
			conn.CloseNow()
			for j := range ordered { // drain so the reader ends
				<-j.done
			}
			break
		}
	}
	verifiers.Wait()
	if rerr := <-readErr; err == nil {
		err = rerr
	}
	return err
}

// keepAlive pings the labeler every Options.Ping while the connection is
// idle (nothing read meanwhile, nothing waiting for the store), and closes
// the connection when no pong comes within Options.Ping: a silent labeler
// is normal, a dead connection is not.
func (st *stream) keepAlive(ctx context.Context, conn *websocket.Conn, ordered chan *job) {
	every := st.sub.cfg.Ping
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if len(ordered) > 0 || time.Since(time.Unix(0, st.lastRead.Load())) < every {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, every)
		err := conn.Ping(pctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			st.sub.cfg.Logger.Info("labeler did not answer a ping; closing the connection", "labeler", st.sub.did, "err", err)
			conn.CloseNow()
			return
		}
	}
}

// maxVerifiers bounds the goroutines verifying one labeler's labels.
const maxVerifiers = 4

// job is an event on its way from the reader through a verifier to the
// store: done is closed once ev is set.
type job struct {
	evt  *comatproto.LabelSubscribeLabels_Labels
	ev   checked
	done chan struct{}
}

// Limits of the events stored in one transaction.
const (
	maxCoalesceEvents = 64
	maxCoalesceLabels = 1000
)

// coalesce returns first's event and those verified behind it, up to the
// limits: when the store is slower than the stream (a backfill, a flood),
// consecutive events go in one transaction; otherwise each goes alone.
func (st *stream) coalesce(first *job, ordered <-chan *job) []checked {
	batch := []checked{first.ev}
	labels := len(first.ev.labels)
	for len(batch) < maxCoalesceEvents && labels < maxCoalesceLabels {
		select {
		case j, ok := <-ordered:
			if !ok {
				return batch
			}
			<-j.done
			batch = append(batch, j.ev)
			labels += len(j.ev.labels)
		default:
			return batch
		}
	}
	return batch
}

// apply hands each event's labels to the hook, in order, and stores them
// all in one transaction with the last event's sequence number as the
// cursor: the same labels and cursor as storing the events one by one
// (the store keeps the latest by cts, the later on a tie), in fewer
// transactions.
func (st *stream) apply(ctx context.Context, batch []checked) error {
	s := st.sub
	var labels []storage.Label
	var newest time.Time
	for _, ev := range batch {
		if len(ev.labels) > 0 && s.cfg.Hook != nil {
			s.cfg.Hook.LabelsArrived(ctx, s.did, ev.labels)
		}
		labels = append(labels, ev.labels...)
		if ev.newest.After(newest) {
			newest = ev.newest
		}
	}
	seq := batch[len(batch)-1].seq
	err := s.cfg.Store.ApplyLabels(ctx, storage.LabelBatch{Src: s.did, Labels: labels, Cursor: seq})
	if errors.Is(err, storage.ErrNotFound) {
		return errGone
	}
	if err != nil {
		return fmt.Errorf("storing labels of events %d to %d: %w", batch[0].seq, seq, err)
	}
	st.cursor = seq
	st.stored += len(batch)
	if len(labels) > 0 {
		s.cfg.Metrics.LabelsKept(s.did, len(labels), s.cfg.Now().Sub(newest))
	}
	return nil
}

// read decodes and checks frames and sends the events to out, in order,
// until the connection or ctx ends. A frame that does not decode is
// counted and skipped; an error frame ends the connection. A frame over
// the size limit is skipped too, and counts as its event without labels,
// so that the cursor moves past it: a labeler replays its log from the
// cursor, and would send the same frame again on every connection.
func (st *stream) read(ctx context.Context, conn *websocket.Conn, jobs, ordered chan<- *job) error {
	s := st.sub
	last := st.cursor
	limit := s.cfg.frameLimit()
	for {
		typ, r, err := conn.Reader(ctx)
		if err != nil {
			return fmt.Errorf("reading: %w", err)
		}
		data, err := io.ReadAll(io.LimitReader(r, limit+1))
		if err != nil {
			return fmt.Errorf("reading: %w", err)
		}
		st.lastRead.Store(time.Now().UnixNano())
		var f frame
		switch {
		case int64(len(data)) > limit:
			if f, err = st.skipOversized(ctx, r, data, limit); err != nil {
				return err
			}
		case typ != websocket.MessageBinary:
			s.report.refuse(ctx, RefusedMalformed)
			continue
		default:
			if f, err = decodeFrame(data); err != nil {
				s.report.refuse(ctx, RefusedMalformed)
				s.cfg.Logger.Debug("undecodable frame from labeler", "labeler", s.did, "err", err)
				continue
			}
		}
		switch {
		case f.err != nil:
			return fmt.Errorf("labeler sent error %s: %s", f.err.Error, f.err.Message)
		case f.info != nil:
			msg := ""
			if f.info.Message != nil {
				msg = *f.info.Message
			}
			s.cfg.Logger.Info("labeler stream info", "labeler", s.did, "name", f.info.Name, "message", msg)
		case f.labels != nil:
			if f.labels.Seq <= last {
				continue // replayed from before the cursor
			}
			if seq := f.labels.Seq; seq > last+1 && seq != s.acceptedGap {
				// Events may be missing: some labelers lose those created
				// while a subscriber connects. Connecting again from the
				// cursor replays them; a gap the replay shows again is the
				// labeler's own and is accepted.
				s.acceptedGap = seq
				return fmt.Errorf("%w: event %d after %d; connecting again from %d", errGap, seq, last, last)
			}
			j := &job{evt: f.labels, done: make(chan struct{})}
			for _, ch := range []chan<- *job{jobs, ordered} {
				select {
				case ch <- j:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			last = f.labels.Seq
		}
	}
}

// skipOversized reads the rest of a frame over limit (whose first limit+1
// bytes are head) and drops it: it is counted, logged at WARN and recorded
// in the event log with its sequence number, read from the head (a
// #labels body starts with seq in DAG-CBOR's key order). It returns the
// frame as a #labels event without labels, so that the cursor moves past
// it, or an empty frame when the head holds no sequence number (the gap
// it leaves is then crossed by connecting again once, see read).
func (st *stream) skipOversized(ctx context.Context, r io.Reader, head []byte, limit int64) (frame, error) {
	s := st.sub
	rest, err := io.Copy(io.Discard, r)
	if err != nil {
		return frame{}, fmt.Errorf("reading: %w", err)
	}
	size := int64(len(head)) + rest
	s.report.refuse(ctx, RefusedOversized)
	seq, ok := peekLabelsSeq(head)
	s.cfg.Logger.Warn("skipped a labeler frame over the size limit", "labeler", s.did, "seq", seq, "bytes", size,
		"limit", limit, "setting", MaxFrameSetting)
	s.report.record(ctx, "labeler.frame_skipped", eventlog.Warn, map[string]any{
		"seq": seq, "bytes": size, "limit": limit, "setting": MaxFrameSetting})
	if !ok {
		return frame{}, nil
	}
	return frame{labels: &comatproto.LabelSubscribeLabels_Labels{Seq: seq}}, nil
}

// check checks and verifies an event's labels, counting the refused ones.
func (st *stream) check(ctx context.Context, evt *comatproto.LabelSubscribeLabels_Labels) checked {
	s := st.sub
	s.cfg.Metrics.LabelsArrived(s.did, len(evt.Labels))
	now := s.cfg.Now()
	ev := checked{seq: evt.Seq, labels: make([]storage.Label, 0, len(evt.Labels))}
	for _, l := range evt.Labels {
		lab, out, reason := checkLabel(l, s.did, now, s.cfg.MaxFuture)
		if reason == "" && !st.verify(ctx, &lab) {
			reason = RefusedBadSignature
		}
		if reason != "" {
			s.report.refuse(ctx, reason)
			continue
		}
		ev.labels = append(ev.labels, out)
		if out.Cts.After(ev.newest) {
			ev.newest = out.Cts
		}
	}
	return ev
}

// verify verifies a label's signature with the labeler's key. When it
// fails, it re-resolves the labeler's DID, bypassing the directory's
// cache, in case the key rotated: at most once per EventEvery (a label
// verified by another goroutine with a key refreshed meanwhile is tried
// again with that one).
func (st *stream) verify(ctx context.Context, lab *labeling.Label) bool {
	st.keyMu.RLock()
	key := st.target.key
	st.keyMu.RUnlock()
	if lab.VerifySignature(key) == nil {
		return true
	}
	st.keyMu.Lock()
	defer st.keyMu.Unlock()
	if !st.target.key.Equal(key) {
		return lab.VerifySignature(st.target.key) == nil
	}
	s := st.sub
	now := s.cfg.Now()
	if !s.refreshed.IsZero() && now.Sub(s.refreshed) < s.cfg.EventEvery {
		return false
	}
	s.refreshed = now
	t, err := s.resolve(ctx, true)
	if err != nil {
		if ctx.Err() == nil {
			s.report.record(ctx, "labeler.resolve_failed", eventlog.Warn, map[string]any{"error": err.Error()})
		}
		return false
	}
	if t.key.Equal(st.target.key) {
		return false
	}
	s.cfg.Logger.Info("labeler key changed", "labeler", s.did)
	st.target.key = t.key
	return lab.VerifySignature(st.target.key) == nil
}
