package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	comatproto "github.com/bluesky-social/indigo/api/atproto"
	"github.com/bluesky-social/indigo/atproto/syntax"
	"github.com/coder/websocket"

	"github.com/lexview/lexview/appview/internal/streamframe"
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
	kind     string
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
	f := firehoseFrame{kind: strings.TrimPrefix(hdr.Type, "#")}
	switch hdr.Op {
	case streamframe.OpError:
		body, err := streamframe.ReadError(r)
		if err != nil {
			return firehoseFrame{}, err
		}
		f.kind, f.err = "error", &body
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

// read handles frames until the connection ends.
func (f *Firehose) read(ctx context.Context, conn *websocket.Conn, st *streamState, sink CommitSink) error {
	for {
		_, r, err := conn.Reader(ctx)
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		data, err := io.ReadAll(io.LimitReader(r, f.MaxMessageSize+1))
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		received := f.Now()
		if int64(len(data)) > f.MaxMessageSize {
			rest, err := io.Copy(io.Discard, r)
			sink.Skipped(ctx, SkippedEvent{Reason: SkipTooLarge, Size: int64(len(data)) + rest,
				Err: fmt.Sprintf("the frame is larger than %d bytes", f.MaxMessageSize)})
			if err != nil {
				return fmt.Errorf("read: %w", err)
			}
			continue
		}
		fr, err := decodeFirehoseFrame(data)
		if err != nil {
			sink.Skipped(ctx, SkippedEvent{Reason: SkipUndecodable, Size: int64(len(data)), Err: err.Error()})
			continue
		}
		if err := f.handle(ctx, fr, st, sink, received); err != nil {
			return err
		}
		if s := fr.seq(); s > st.cursor {
			st.cursor, st.resume = s, true
		}
		f.noteEvent(st.cursor, received)
	}
}

// errStreamError ends a connection on the server's error frame.
var errStreamError = errors.New("the firehose sent an error frame")

// handle acts on one decoded frame.
func (f *Firehose) handle(ctx context.Context, fr firehoseFrame, st *streamState, sink CommitSink, received time.Time) error {
	switch {
	case fr.err != nil:
		return fmt.Errorf("%w: %s: %s", errStreamError, fr.err.Error, fr.err.Message)
	case fr.info != nil:
		msg := ""
		if fr.info.Message != nil {
			msg = *fr.info.Message
		}
		f.Logger.Warn("firehose info", "name", fr.info.Name, "message", msg)
	case fr.commit != nil:
		return f.handleCommit(ctx, fr.commit, st, sink, received)
	case fr.sync != nil:
		return f.handleSync(ctx, fr.sync, st, sink)
	case fr.identity != nil:
		handle := ""
		if fr.identity.Handle != nil {
			handle = *fr.identity.Handle
		}
		if did, err := syntax.ParseDID(fr.identity.Did); err == nil {
			_ = f.Directory.Purge(ctx, did.AtIdentifier())
		}
		sink.Identity(ctx, IdentityEvent{DID: fr.identity.Did, Handle: handle})
	case fr.account != nil:
		status := ""
		if fr.account.Status != nil {
			status = *fr.account.Status
		}
		sink.Account(ctx, AccountEvent{DID: fr.account.Did, Active: fr.account.Active, Status: status})
	}
	return nil
}

// handleCommit verifies a commit and hands over its changes of the wanted
// collections with the state it reached, or refuses it.
func (f *Firehose) handleCommit(ctx context.Context, c *comatproto.SyncSubscribeRepos_Commit, st *streamState,
	sink CommitSink, received time.Time) error {
	have, known, err := st.repos.get(ctx, sink, c.Repo)
	if err != nil {
		return fmt.Errorf("read the state of %s: %w", c.Repo, err)
	}
	if known && c.Rev <= have.Rev {
		// Already applied (a replay) or older: ignored, position kept.
		f.count(func(n *FirehoseCounts) { n.Stale++ })
		return f.handOver(ctx, sink, nil, nil, c.Seq, st)
	}
	vc, reason, err := f.verifyCommit(ctx, c)
	if err != nil {
		f.refuse(ctx, sink, SkippedEvent{Reason: reason, Position: c.Seq, Size: int64(len(c.Blocks)), Kind: "commit",
			DID: c.Repo, Err: err.Error()}, have, c.Rev)
		return f.handOver(ctx, sink, nil, nil, c.Seq, st)
	}
	f.count(func(n *FirehoseCounts) { n.Verified++ })
	if known {
		gap := ""
		switch {
		case c.Since == nil || *c.Since != have.Rev:
			gap = GapSince
		case vc.prevData != have.Data:
			gap = GapPrevData
		}
		if gap != "" {
			f.resync(ctx, sink, ResyncRequest{DID: c.Repo, Reason: gap, Seq: c.Seq, Have: have, Rev: c.Rev})
		}
	}
	changes, err := vc.changes(ctx, f.wantedNow(), received)
	if err != nil {
		f.refuse(ctx, sink, SkippedEvent{Reason: RefuseBadCommit, Position: c.Seq, Kind: "commit", DID: c.Repo,
			Err: err.Error()}, have, c.Rev)
		return f.handOver(ctx, sink, nil, nil, c.Seq, st)
	}
	state := storage.RepoState{DID: c.Repo, Rev: c.Rev, Data: vc.data}
	return f.handOver(ctx, sink, changes, &state, c.Seq, st)
}

// handleSync verifies a #sync event (a repository's declared current
// state) and, when it moves the repository to a state other than the one
// applied, requests a resync from there.
func (f *Firehose) handleSync(ctx context.Context, s *comatproto.SyncSubscribeRepos_Sync, st *streamState, sink CommitSink) error {
	have, known, err := st.repos.get(ctx, sink, s.Did)
	if err != nil {
		return fmt.Errorf("read the state of %s: %w", s.Did, err)
	}
	if known && s.Rev <= have.Rev {
		f.count(func(n *FirehoseCounts) { n.Stale++ })
		return f.handOver(ctx, sink, nil, nil, s.Seq, st)
	}
	commit, reason, err := f.verifySync(ctx, s)
	if err != nil {
		f.refuse(ctx, sink, SkippedEvent{Reason: reason, Position: s.Seq, Size: int64(len(s.Blocks)), Kind: "sync",
			DID: s.Did, Err: err.Error()}, have, s.Rev)
		return f.handOver(ctx, sink, nil, nil, s.Seq, st)
	}
	f.count(func(n *FirehoseCounts) { n.Verified++ })
	data := commit.Data.String()
	if !known || data != have.Data {
		f.resync(ctx, sink, ResyncRequest{DID: s.Did, Reason: GapSync, Seq: s.Seq, Have: have, Rev: s.Rev})
	}
	state := storage.RepoState{DID: s.Did, Rev: s.Rev, Data: data}
	return f.handOver(ctx, sink, nil, &state, s.Seq, st)
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
