package labelsub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	comatproto "github.com/bluesky-social/indigo/api/atproto"
	"github.com/coder/websocket"

	"github.com/lexview/lexview/appview/internal/eventlog"
	"github.com/lexview/lexview/storage"
)

// pipelineDepth is how many checked events wait for the store while the
// next ones are read and verified: it bounds memory to about that many
// frames, and a labeler that floods is read at the pace the store takes.
const pipelineDepth = 8

// errOversized ends a connection that sent a frame over Config.MaxFrame.
var errOversized = errors.New("frame over the size limit")

// stream is one connection to a labeler: a reader goroutine decodes and
// checks frames while the caller's goroutine stores them in order.
type stream struct {
	sub    *subscription
	target target
	cursor int64 // the last stored sequence number
	stored int   // events stored on this connection
}

// checked is an event ready to store.
type checked struct {
	seq    int64
	labels []storage.Label
	newest time.Time // the latest cts among labels
}

// run connects and stores events until the connection ends or ctx ends.
func (st *stream) run(ctx context.Context) error {
	s := st.sub
	u := st.target.endpoint + "?cursor=" + strconv.FormatInt(st.cursor, 10)
	dctx, cancel := context.WithTimeout(ctx, DefaultDialTimout)
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
	events := make(chan checked, pipelineDepth)
	readErr := make(chan error, 1)
	go func() {
		readErr <- st.read(rctx, conn, events)
		close(events)
	}()
	for ev := range events {
		if err := st.apply(ctx, ev); err != nil {
			rcancel()
			conn.CloseNow()
			for range events { // drain so the reader ends
			}
			<-readErr
			return err
		}
	}
	return <-readErr
}

// apply hands an event's labels to the hook and stores them with the
// event's sequence number as the cursor.
func (st *stream) apply(ctx context.Context, ev checked) error {
	s := st.sub
	if len(ev.labels) > 0 && s.cfg.Hook != nil {
		s.cfg.Hook.LabelsArrived(ctx, s.did, ev.labels)
	}
	err := s.cfg.Store.ApplyLabels(ctx, storage.LabelBatch{Src: s.did, Labels: ev.labels, Cursor: ev.seq})
	if errors.Is(err, storage.ErrNotFound) {
		return errGone
	}
	if err != nil {
		return fmt.Errorf("storing labels of event %d: %w", ev.seq, err)
	}
	st.cursor = ev.seq
	st.stored++
	if len(ev.labels) > 0 {
		s.cfg.Metrics.LabelsKept(s.did, len(ev.labels), s.cfg.Now().Sub(ev.newest))
	}
	return nil
}

// read decodes and checks frames and sends the events to out, in order,
// until the connection or ctx ends. A frame that does not decode is
// counted and skipped; an error frame or an oversized one ends the
// connection.
func (st *stream) read(ctx context.Context, conn *websocket.Conn, out chan<- checked) error {
	s := st.sub
	last := st.cursor
	for {
		typ, r, err := conn.Reader(ctx)
		if err != nil {
			return fmt.Errorf("reading: %w", err)
		}
		data, err := io.ReadAll(io.LimitReader(r, s.cfg.MaxFrame+1))
		if err != nil {
			return fmt.Errorf("reading: %w", err)
		}
		if int64(len(data)) > s.cfg.MaxFrame {
			s.report.refuse(ctx, RefusedOversized)
			conn.Close(websocket.StatusMessageTooBig, "frame over "+strconv.FormatInt(s.cfg.MaxFrame, 10)+" bytes")
			return fmt.Errorf("%w (%d bytes)", errOversized, s.cfg.MaxFrame)
		}
		if typ != websocket.MessageBinary {
			s.report.refuse(ctx, RefusedMalformed)
			continue
		}
		f, err := decodeFrame(data)
		if err != nil {
			s.report.refuse(ctx, RefusedMalformed)
			s.cfg.Logger.Debug("undecodable frame from labeler", "labeler", s.did, "err", err)
			continue
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
			ev := st.check(ctx, f.labels)
			select {
			case out <- ev:
			case <-ctx.Done():
				return ctx.Err()
			}
			last = ev.seq
		}
	}
}

// check checks and verifies an event's labels, counting the refused ones.
func (st *stream) check(ctx context.Context, evt *comatproto.LabelSubscribeLabels_Labels) checked {
	s := st.sub
	s.cfg.Metrics.LabelsArrived(s.did, len(evt.Labels))
	now := s.cfg.Now()
	ev := checked{seq: evt.Seq, labels: make([]storage.Label, 0, len(evt.Labels))}
	for _, l := range evt.Labels {
		lab, out, reason := checkLabel(l, s.did, now, s.cfg.MaxFuture)
		if reason == "" && lab.VerifySignature(st.target.key) != nil {
			reason = RefusedBadSignature
			if st.refreshKey(ctx) && lab.VerifySignature(st.target.key) == nil {
				reason = ""
			}
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

// refreshKey re-resolves the labeler's DID, bypassing the directory's
// cache, after a signature failed to verify: the key may have rotated. It
// does so at most once per EventEvery, and reports whether the key
// changed.
func (st *stream) refreshKey(ctx context.Context) bool {
	s := st.sub
	now := s.cfg.Now()
	if !s.refreshed.IsZero() && now.Sub(s.refreshed) < s.cfg.EventEvery {
		return false
	}
	s.refreshed = now
	t, err := s.resolve(ctx, true)
	if err != nil {
		s.report.record(ctx, "labeler.resolve_failed", eventlog.Warn, map[string]any{"error": err.Error()})
		return false
	}
	if t.key.Equal(st.target.key) {
		return false
	}
	s.cfg.Logger.Info("labeler key changed", "labeler", s.did)
	st.target.key = t.key
	return true
}
