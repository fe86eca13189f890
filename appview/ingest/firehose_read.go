package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	comatproto "github.com/bluesky-social/indigo/api/atproto"
	"github.com/bluesky-social/indigo/atproto/repo"
	"github.com/bluesky-social/indigo/atproto/syntax"
	"github.com/coder/websocket"

	"github.com/lexview/lexview/appview/internal/core/streamframe"
	"github.com/lexview/lexview/storage"
)

// streamState is where a firehose is: the last sequence number handed to
// the sink (resume: there is one, else the subscription starts live) and
// the repositories' states.
type streamState struct {
	cursor int64
	resume bool
	repos  *repoCache
}

// firehoseFrame is one decoded subscribeRepos frame: at most one field is
// set (none for a message type not used here).
type firehoseFrame struct {
	commit   *comatproto.SyncSubscribeRepos_Commit
	sync     *comatproto.SyncSubscribeRepos_Sync
	identity *comatproto.SyncSubscribeRepos_Identity
	account  *comatproto.SyncSubscribeRepos_Account
	info     *comatproto.SyncSubscribeRepos_Info
	err      *streamframe.ErrorBody
}

// decodeFirehoseFrame decodes a binary subscribeRepos message with
// indigo's event-stream types.
func decodeFirehoseFrame(data []byte) (firehoseFrame, error) {
	r := bytes.NewReader(data)
	hdr, err := streamframe.ReadHeader(r)
	if err != nil {
		return firehoseFrame{}, err
	}
	var f firehoseFrame
	switch hdr.Op {
	case streamframe.OpError:
		body, err := streamframe.ReadError(r)
		if err != nil {
			return firehoseFrame{}, err
		}
		f.err = &body
		return f, nil
	case streamframe.OpMessage:
	default:
		return firehoseFrame{}, fmt.Errorf("unknown frame op %d", hdr.Op)
	}
	switch hdr.Type {
	case "#commit":
		f.commit = &comatproto.SyncSubscribeRepos_Commit{}
		err = f.commit.UnmarshalCBOR(r)
	case "#sync":
		f.sync = &comatproto.SyncSubscribeRepos_Sync{}
		err = f.sync.UnmarshalCBOR(r)
	case "#identity":
		f.identity = &comatproto.SyncSubscribeRepos_Identity{}
		err = f.identity.UnmarshalCBOR(r)
	case "#account":
		f.account = &comatproto.SyncSubscribeRepos_Account{}
		err = f.account.UnmarshalCBOR(r)
	case "#info":
		f.info = &comatproto.SyncSubscribeRepos_Info{}
		err = f.info.UnmarshalCBOR(r)
	default:
		return f, nil // a message type not used here
	}
	if err != nil {
		return firehoseFrame{}, fmt.Errorf("%s body: %w", hdr.Type, err)
	}
	if r.Len() != 0 {
		return firehoseFrame{}, fmt.Errorf("%d bytes after the frame body", r.Len())
	}
	return f, nil
}

// seq is the frame's stream position (0 for frames without one).
func (fr firehoseFrame) seq() int64 {
	switch {
	case fr.commit != nil:
		return fr.commit.Seq
	case fr.sync != nil:
		return fr.sync.Seq
	case fr.identity != nil:
		return fr.identity.Seq
	case fr.account != nil:
		return fr.account.Seq
	}
	return 0
}

// time is the frame's own timestamp (its "time" field), zero when it has
// none or it does not parse.
func (fr firehoseFrame) time() time.Time {
	var s string
	switch {
	case fr.commit != nil:
		s = fr.commit.Time
	case fr.sync != nil:
		s = fr.sync.Time
	case fr.identity != nil:
		s = fr.identity.Time
	case fr.account != nil:
		s = fr.account.Time
	}
	t, err := syntax.ParseDatetimeLenient(s)
	if err != nil {
		return time.Time{}
	}
	return t.Time()
}

// firehoseJob is one frame on its way through the pipeline: read in
// order, verified by any worker, applied in order.
type firehoseJob struct {
	fr       firehoseFrame
	skip     *SkippedEvent // a frame that could not be read or decoded
	received time.Time
	done     chan struct{} // closed once verified

	// Set by the worker: a verified commit or #sync commit, or the
	// refusal.
	commit  *verifiedCommit
	sync    *repo.Commit
	changes []storage.Change
	reason  string
	failure error
}

// read handles frames until the connection ends. Frames are read and
// applied in stream order; the verification of commits, the costly part,
// runs on Workers goroutines in between.
func (f *Firehose) read(ctx context.Context, conn *websocket.Conn, st *streamState, sink CommitSink) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	verify := make(chan *firehoseJob, 4*f.Workers)
	ordered := make(chan *firehoseJob, 64*f.Workers)
	var workers sync.WaitGroup
	for range f.Workers {
		workers.Go(func() {
			for j := range verify {
				f.verifyJob(ctx, j)
				close(j.done)
			}
		})
	}
	applied := make(chan error, 1)
	go func() {
		var err error
		for j := range ordered {
			if err != nil {
				continue // drain: the reader stops at the cancellation
			}
			<-j.done
			if err = f.apply(ctx, j, st, sink); err != nil {
				cancel(err)
			}
		}
		applied <- err
	}()
	err := f.readFrames(ctx, conn, verify, ordered)
	close(verify)
	close(ordered)
	workers.Wait()
	if aerr := <-applied; aerr != nil {
		return aerr
	}
	return err
}

// readFrames reads frames in order and queues them until the connection
// ends.
func (f *Firehose) readFrames(ctx context.Context, conn *websocket.Conn, verify, ordered chan<- *firehoseJob) error {
	for {
		_, r, err := conn.Reader(ctx)
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		data, err := io.ReadAll(io.LimitReader(r, f.MaxMessageSize+1))
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		j := &firehoseJob{received: f.now(), done: make(chan struct{})}
		if int64(len(data)) > f.MaxMessageSize {
			rest, err := io.Copy(io.Discard, r)
			j.skip = &SkippedEvent{Reason: SkipTooLarge, Size: int64(len(data)) + rest,
				Err: fmt.Sprintf("the frame is larger than %d bytes", f.MaxMessageSize)}
			if err != nil {
				return fmt.Errorf("read: %w", err)
			}
		} else if j.fr, err = decodeFirehoseFrame(data); err != nil {
			j.skip = &SkippedEvent{Reason: SkipUndecodable, Size: int64(len(data)), Err: err.Error()}
		}
		if j.fr.commit != nil || j.fr.sync != nil {
			select {
			case verify <- j:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		} else {
			close(j.done)
		}
		select {
		case ordered <- j:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// verifyJob verifies a commit or #sync frame, and reads the changes of
// the wanted collections from a verified commit.
func (f *Firehose) verifyJob(ctx context.Context, j *firehoseJob) {
	switch {
	case j.fr.commit != nil:
		j.commit, j.reason, j.failure = f.verifyCommit(ctx, j.fr.commit)
		if j.failure == nil {
			if j.changes, j.failure = j.commit.changes(ctx, f.wantedNow(), j.received); j.failure != nil {
				j.reason = RefuseBadCommit
			}
		}
	case j.fr.sync != nil:
		j.sync, j.reason, j.failure = f.verifySync(ctx, j.fr.sync)
	}
}

// errStreamError ends a connection on the server's error frame.
var errStreamError = errors.New("the firehose sent an error frame")

// apply acts on one frame, in stream order.
func (f *Firehose) apply(ctx context.Context, j *firehoseJob, st *streamState, sink CommitSink) error {
	if err := ctx.Err(); err != nil {
		// Stopping: a verification cut short by it is no refusal.
		return context.Cause(ctx)
	}
	fr := j.fr
	switch {
	case j.skip != nil:
		sink.Skipped(ctx, *j.skip)
	case fr.err != nil:
		return fmt.Errorf("%w: %s: %s", errStreamError, fr.err.Error, fr.err.Message)
	case fr.info != nil:
		msg := ""
		if fr.info.Message != nil {
			msg = *fr.info.Message
		}
		f.Logger.Warn("firehose info", "name", fr.info.Name, "message", msg)
	case fr.commit != nil:
		if err := f.applyCommit(ctx, j, st, sink); err != nil {
			return err
		}
	case fr.sync != nil:
		if err := f.applySync(ctx, j, st, sink); err != nil {
			return err
		}
	case fr.identity != nil:
		handle := ""
		if fr.identity.Handle != nil {
			handle = *fr.identity.Handle
		}
		if did, err := syntax.ParseDID(fr.identity.Did); err == nil {
			_ = f.Directory.Purge(ctx, did.AtIdentifier())
		}
		sink.Identity(ctx, IdentityEvent{DID: fr.identity.Did, Handle: handle})
		if err := f.handOver(ctx, sink, nil, nil, fr.identity.Seq, st); err != nil {
			return err
		}
	case fr.account != nil:
		if err := f.applyAccount(ctx, fr.account, st, sink); err != nil {
			return err
		}
	}
	if s := fr.seq(); s > st.cursor {
		st.cursor, st.resume = s, true
	}
	f.status.event(st.cursor, j.received, fr.time())
	return nil
}

// applyCommit hands over a verified commit's changes of the wanted
// collections with the state it reached, or refuses it.
func (f *Firehose) applyCommit(ctx context.Context, j *firehoseJob, st *streamState, sink CommitSink) error {
	c := j.fr.commit
	e, err := st.repos.get(ctx, sink, c.Repo)
	if err != nil {
		return fmt.Errorf("read the state of %s: %w", c.Repo, err)
	}
	have, known := e.state, e.known
	if known && c.Rev <= have.Rev {
		// Already applied (a replay) or older: ignored, position kept.
		f.count(func(n *FirehoseCounts) { n.Stale++ })
		return f.handOver(ctx, sink, nil, nil, c.Seq, st)
	}
	if e.inactive != "" {
		f.skipInactive(ctx, sink, SkippedEvent{Position: c.Seq, Size: int64(len(c.Blocks)), Kind: "commit", DID: c.Repo}, e.inactive)
		return f.handOver(ctx, sink, nil, nil, c.Seq, st)
	}
	if j.failure != nil {
		f.refuse(ctx, sink, SkippedEvent{Reason: j.reason, Position: c.Seq, Size: int64(len(c.Blocks)), Kind: "commit",
			DID: c.Repo, Err: j.failure.Error()}, have, c.Rev)
		return f.handOver(ctx, sink, nil, nil, c.Seq, st)
	}
	f.count(func(n *FirehoseCounts) { n.Verified++ })
	if known {
		gap := ""
		switch {
		case c.Since == nil || *c.Since != have.Rev:
			gap = GapSince
		case j.commit.prevData != have.Data:
			gap = GapPrevData
		}
		if gap != "" {
			f.resync(ctx, sink, ResyncRequest{DID: c.Repo, Reason: gap, Seq: c.Seq, Have: have, Rev: c.Rev})
		}
	}
	state := storage.RepoState{DID: c.Repo, Rev: c.Rev, Data: j.commit.data}
	return f.handOver(ctx, sink, j.changes, &state, c.Seq, st)
}

// applySync applies a verified #sync event (a repository's declared
// current state): when it moves the repository to a tree other than the
// one applied, it requests a resync from there.
func (f *Firehose) applySync(ctx context.Context, j *firehoseJob, st *streamState, sink CommitSink) error {
	s := j.fr.sync
	e, err := st.repos.get(ctx, sink, s.Did)
	if err != nil {
		return fmt.Errorf("read the state of %s: %w", s.Did, err)
	}
	have, known := e.state, e.known
	if known && s.Rev <= have.Rev {
		f.count(func(n *FirehoseCounts) { n.Stale++ })
		return f.handOver(ctx, sink, nil, nil, s.Seq, st)
	}
	if e.inactive != "" {
		f.skipInactive(ctx, sink, SkippedEvent{Position: s.Seq, Size: int64(len(s.Blocks)), Kind: "sync", DID: s.Did}, e.inactive)
		return f.handOver(ctx, sink, nil, nil, s.Seq, st)
	}
	if j.failure != nil {
		f.refuse(ctx, sink, SkippedEvent{Reason: j.reason, Position: s.Seq, Size: int64(len(s.Blocks)), Kind: "sync",
			DID: s.Did, Err: j.failure.Error()}, have, s.Rev)
		return f.handOver(ctx, sink, nil, nil, s.Seq, st)
	}
	f.count(func(n *FirehoseCounts) { n.Verified++ })
	data := j.sync.Data.String()
	if !known || data != have.Data {
		f.resync(ctx, sink, ResyncRequest{DID: s.Did, Reason: GapSync, Seq: s.Seq, Have: have, Rev: s.Rev})
	}
	state := storage.RepoState{DID: s.Did, Rev: s.Rev, Data: data}
	return f.handOver(ctx, sink, nil, &state, s.Seq, st)
}

// applyAccount hands over an #account event. The account's status is
// remembered at once: the commits after it are skipped while it is
// inactive (the sink removes its records, in stream order).
func (f *Firehose) applyAccount(ctx context.Context, a *comatproto.SyncSubscribeRepos_Account, st *streamState, sink CommitSink) error {
	status := ""
	if a.Status != nil {
		status = *a.Status
	}
	if _, err := syntax.ParseDID(a.Did); err == nil {
		e, err := st.repos.get(ctx, sink, a.Did)
		if err != nil {
			return fmt.Errorf("read the state of %s: %w", a.Did, err)
		}
		e.inactive = ""
		if !a.Active {
			e.inactive = inactiveStatus(status)
		}
		st.repos.set(a.Did, e)
	}
	sink.Account(ctx, AccountEvent{DID: a.Did, Active: a.Active, Status: status})
	return f.handOver(ctx, sink, nil, nil, a.Seq, st)
}

// skipInactive reports a commit or #sync event of an inactive account,
// skipped.
func (f *Firehose) skipInactive(ctx context.Context, sink CommitSink, e SkippedEvent, status string) {
	f.count(func(n *FirehoseCounts) { n.Inactive++ })
	e.Reason, e.Err = SkipInactive, "the account is "+status
	sink.Skipped(ctx, e)
}

// handOver passes changes, a repository's new state (nil: none) and the
// position to the sink, and remembers the state.
func (f *Firehose) handOver(ctx context.Context, sink CommitSink, changes []storage.Change, state *storage.RepoState,
	seq int64, st *streamState) error {
	var repos []storage.RepoState
	if state != nil {
		repos = []storage.RepoState{*state}
	}
	pos := max(seq, st.cursor)
	if err := sink.Commit(ctx, changes, repos, pos); err != nil {
		return fmt.Errorf("hand over a commit: %w", err)
	}
	if state != nil {
		st.repos.put(*state)
	}
	return nil
}

// refuse reports a refused event, and a resync of its repository: what
// the event changed is missing from the index.
func (f *Firehose) refuse(ctx context.Context, sink CommitSink, e SkippedEvent, have storage.RepoState, rev string) {
	f.countRefused(e.Reason)
	f.Logger.Warn("firehose event refused", "reason", e.Reason, "seq", e.Position, "did", e.DID, "err", e.Err)
	sink.Skipped(ctx, e)
	f.resync(ctx, sink, ResyncRequest{DID: e.DID, Reason: GapRefused, Seq: e.Position, Have: have, Rev: rev})
}

func (f *Firehose) resync(ctx context.Context, sink CommitSink, r ResyncRequest) {
	f.count(func(n *FirehoseCounts) { n.Resyncs++ })
	f.Logger.Info("repository needs a resync", "did", r.DID, "reason", r.Reason, "seq", r.Seq, "have", r.Have.Rev, "rev", r.Rev)
	sink.Resync(ctx, r)
}

// wantedCollection reports whether collection is in the sorted set.
func wantedCollection(wanted []string, collection string) bool {
	_, ok := slices.BinarySearch(wanted, collection)
	return ok
}
