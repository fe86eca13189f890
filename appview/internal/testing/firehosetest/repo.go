// Package firehosetest builds signed repositories and their
// com.atproto.sync.subscribeRepos events with indigo's repository code,
// and serves them from a stand-in firehose on 127.0.0.1, for the tests and
// benchmarks of the verified event source.
package firehosetest

import (
	"bytes"
	"context"
	"fmt"
	"time"

	comatproto "github.com/bluesky-social/indigo/api/atproto"
	"github.com/bluesky-social/indigo/atproto/atcrypto"
	"github.com/bluesky-social/indigo/atproto/atdata"
	"github.com/bluesky-social/indigo/atproto/repo"
	"github.com/bluesky-social/indigo/atproto/repo/mst"
	"github.com/bluesky-social/indigo/atproto/syntax"
	lexutil "github.com/bluesky-social/indigo/lex/util"
	blocks "github.com/ipfs/go-block-format"
	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"

	"github.com/lexview/lexview/internal/repocar/repocartest"
)

// Repo is a repository in memory: its MST, signing key and last revision.
type Repo struct {
	DID   string
	Key   atcrypto.PrivateKey
	tree  mst.Tree
	clock *syntax.TIDClock
	rev   string // last commit's ("" before the first)
}

// NewRepo makes an empty repository signed with a new K-256 key.
func NewRepo(did string) (*Repo, error) {
	key, err := atcrypto.GeneratePrivateKeyK256()
	if err != nil {
		return nil, err
	}
	return &Repo{DID: did, Key: key, tree: mst.NewEmptyTree(), clock: syntax.NewTIDClock(0)}, nil
}

// Op is one record operation of a commit: Record nil deletes.
type Op struct {
	Collection, RKey string
	Record           map[string]any
}

// Rev is the revision of the last commit ("" before the first).
func (r *Repo) Rev() string { return r.rev }

var recordPrefix = cid.Prefix{Version: 1, Codec: cid.DagCBOR, MhType: multihash.SHA2_256, MhLength: -1}

// Commit applies ops to the repository, signs a new commit and returns its
// #commit event (Seq 0: the server numbers it), with the diff CAR,
// since and prevData as Sync 1.1 specifies.
func (r *Repo) Commit(ops ...Op) (*comatproto.SyncSubscribeRepos_Commit, error) {
	ctx := context.Background()
	prevRoot, err := r.tree.RootCID()
	if err != nil {
		return nil, err
	}
	var records []blocks.Block
	var repoOps []*comatproto.SyncSubscribeRepos_RepoOp
	for _, op := range ops {
		path := op.Collection + "/" + op.RKey
		var val *cid.Cid
		if op.Record != nil {
			raw, err := atdata.MarshalCBOR(op.Record)
			if err != nil {
				return nil, err
			}
			c, err := recordPrefix.Sum(raw)
			if err != nil {
				return nil, err
			}
			blk, err := blocks.NewBlockWithCid(raw, c)
			if err != nil {
				return nil, err
			}
			records = append(records, blk)
			val = &c
		}
		applied, err := repo.ApplyOp(&r.tree, path, val)
		if err != nil {
			return nil, err
		}
		rop := &comatproto.SyncSubscribeRepos_RepoOp{Path: path}
		switch {
		case applied.IsCreate():
			rop.Action = "create"
		case applied.IsDelete():
			rop.Action = "delete"
		case applied.Value != nil && applied.Prev != nil:
			rop.Action = "update"
		default:
			return nil, fmt.Errorf("no-op on %s", path)
		}
		if applied.Value != nil {
			l := lexutil.LexLink(*applied.Value)
			rop.Cid = &l
		}
		if applied.Prev != nil {
			l := lexutil.LexLink(*applied.Prev)
			rop.Prev = &l
		}
		repoOps = append(repoOps, rop)
	}
	diff := &repocartest.MemBlocks{}
	root, err := r.tree.WriteDiffBlocks(ctx, diff)
	if err != nil {
		return nil, err
	}
	commit := repo.Commit{DID: r.DID, Version: repo.ATPROTO_REPO_VERSION, Data: *root, Rev: r.clock.Next().String()}
	if err := commit.Sign(r.Key); err != nil {
		return nil, err
	}
	commitBlock, err := encodeBlock(&commit)
	if err != nil {
		return nil, err
	}
	all := []blocks.Block{commitBlock}
	all = append(all, diff.List()...)
	all = append(all, records...)
	carBytes, err := repocartest.WriteCAR(commitBlock.Cid(), all)
	if err != nil {
		return nil, err
	}
	msg := &comatproto.SyncSubscribeRepos_Commit{
		Repo: r.DID, Rev: commit.Rev, Commit: lexutil.LexLink(commitBlock.Cid()), Blocks: carBytes,
		Ops: repoOps, Blobs: []lexutil.LexLink{}, Time: syntax.DatetimeNow().String(),
	}
	if r.rev != "" {
		since := r.rev
		msg.Since = &since
		pd := lexutil.LexLink(*prevRoot)
		msg.PrevData = &pd
	}
	r.rev = commit.Rev
	return msg, nil
}

// Sync returns a #sync event declaring the repository's current state (a
// CAR holding the last commit only): it signs a new commit without
// changes.
func (r *Repo) Sync() (*comatproto.SyncSubscribeRepos_Sync, error) {
	root, err := r.tree.RootCID()
	if err != nil {
		return nil, err
	}
	commit := repo.Commit{DID: r.DID, Version: repo.ATPROTO_REPO_VERSION, Data: *root, Rev: r.clock.Next().String()}
	if err := commit.Sign(r.Key); err != nil {
		return nil, err
	}
	blk, err := encodeBlock(&commit)
	if err != nil {
		return nil, err
	}
	carBytes, err := repocartest.WriteCAR(blk.Cid(), []blocks.Block{blk})
	if err != nil {
		return nil, err
	}
	r.rev = commit.Rev
	return &comatproto.SyncSubscribeRepos_Sync{Did: r.DID, Rev: commit.Rev, Blocks: carBytes,
		Time: time.Now().UTC().Format(time.RFC3339)}, nil
}

// Rotate gives the repository a new signing key and returns it (publish
// its public key in the directory).
func (r *Repo) Rotate() (atcrypto.PrivateKey, error) {
	key, err := atcrypto.GeneratePrivateKeyK256()
	if err != nil {
		return nil, err
	}
	r.Key = key
	return key, nil
}

func encodeBlock(c *repo.Commit) (blocks.Block, error) {
	var buf bytes.Buffer
	if err := c.MarshalCBOR(&buf); err != nil {
		return nil, err
	}
	id, err := recordPrefix.Sum(buf.Bytes())
	if err != nil {
		return nil, err
	}
	return blocks.NewBlockWithCid(buf.Bytes(), id)
}
