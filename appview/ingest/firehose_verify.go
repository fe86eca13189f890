package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	comatproto "github.com/bluesky-social/indigo/api/atproto"
	"github.com/bluesky-social/indigo/atproto/atdata"
	"github.com/bluesky-social/indigo/atproto/repo"
	"github.com/bluesky-social/indigo/atproto/repo/mst"
	"github.com/bluesky-social/indigo/atproto/syntax"
	lexutil "github.com/bluesky-social/indigo/lex/util"
	"github.com/ipfs/go-cid"

	"github.com/lexview/lexview/storage"
)

// verifiedCommit is a #commit whose signature, blocks and operations
// verified.
type verifiedCommit struct {
	msg      *comatproto.SyncSubscribeRepos_Commit
	repo     *repo.Repo // the partial repository of the commit's blocks
	data     string     // the MST root after the commit
	prevData string     // the MST root before it (the message's prevData)
}

// emptyTreeRoot is the root CID of an empty MST: the prevData of a
// repository's first commit.
var emptyTreeRoot = func() cid.Cid {
	t := mst.NewEmptyTree()
	root, err := t.RootCID()
	if err != nil {
		panic(err)
	}
	return *root
}()

// verifyCommit checks a commit as Sync 1.1 specifies; on failure it
// returns the refusal reason with the error.
func (f *Firehose) verifyCommit(ctx context.Context, c *comatproto.SyncSubscribeRepos_Commit) (*verifiedCommit, string, error) {
	if c.TooBig {
		return nil, RefuseUnverifiable, errors.New("tooBig commit: its blocks are incomplete")
	}
	if c.PrevData == nil {
		if c.Since != nil {
			return nil, RefuseUnverifiable, errors.New("no prevData")
		}
		// A repository's first commit: it starts from the empty tree.
		first := *c
		empty := lexutil.LexLink(emptyTreeRoot)
		first.PrevData = &empty
		c = &first
	}
	for _, op := range c.Ops {
		if (op.Action == "update" || op.Action == "delete") && op.Prev == nil {
			return nil, RefuseUnverifiable, fmt.Errorf("%s of %s without the previous CID", op.Action, op.Path)
		}
	}
	// The blocks (each checked against its CID as the CAR is read), the
	// operations against the MST, and the inverted operations against
	// prevData.
	r, err := repo.VerifyCommitMessage(ctx, c)
	if err != nil {
		return nil, RefuseBadCommit, err
	}
	// The signed commit is the one named, and its tree is the one checked.
	blk, err := r.RecordStore.Get(ctx, cid.Cid(c.Commit))
	if err != nil {
		return nil, RefuseBadCommit, fmt.Errorf("commit block: %w", err)
	}
	var commit repo.Commit
	if err := commit.UnmarshalCBOR(bytes.NewReader(blk.RawData())); err != nil {
		return nil, RefuseBadCommit, fmt.Errorf("commit block: %w", err)
	}
	if err := commit.VerifyStructure(); err != nil {
		return nil, RefuseBadCommit, err
	}
	root, err := r.MST.RootCID()
	if err != nil {
		return nil, RefuseBadCommit, fmt.Errorf("MST root: %w", err)
	}
	if commit.Data != *root || commit.Rev != c.Rev || commit.DID != c.Repo {
		return nil, RefuseBadCommit, errors.New("the commit block does not describe the commit's tree, rev or repository")
	}
	if reason, err := f.verifySignature(ctx, &commit); err != nil {
		return nil, reason, err
	}
	return &verifiedCommit{msg: c, repo: r, data: commit.Data.String(), prevData: cid.Cid(*c.PrevData).String()}, "", nil
}

// verifySync checks a #sync event's commit: its structure and signature.
func (f *Firehose) verifySync(ctx context.Context, s *comatproto.SyncSubscribeRepos_Sync) (*repo.Commit, string, error) {
	commit, _, err := repo.LoadCommitFromCAR(ctx, bytes.NewReader(s.Blocks))
	if err != nil {
		return nil, RefuseBadCommit, err
	}
	if err := commit.VerifyStructure(); err != nil {
		return nil, RefuseBadCommit, err
	}
	if commit.Rev != s.Rev || commit.DID != s.Did {
		return nil, RefuseBadCommit, errors.New("the commit block does not describe the event's rev or repository")
	}
	if reason, err := f.verifySignature(ctx, commit); err != nil {
		return nil, reason, err
	}
	return commit, "", nil
}

// verifySignature checks a commit's signature against its author's
// current #atproto key. When it fails, the DID document is fetched again
// (the key may have rotated since it was cached) and the check repeated
// once.
func (f *Firehose) verifySignature(ctx context.Context, commit *repo.Commit) (string, error) {
	did, err := syntax.ParseDID(commit.DID)
	if err != nil {
		return RefuseBadCommit, err
	}
	for attempt := range 2 {
		if attempt > 0 {
			if err := f.Directory.Purge(ctx, did.AtIdentifier()); err != nil {
				return RefuseNoIdentity, fmt.Errorf("refresh the DID document: %w", err)
			}
		}
		ident, err := f.Directory.LookupDID(ctx, did)
		if err != nil {
			return RefuseNoIdentity, fmt.Errorf("resolve %s: %w", did, err)
		}
		key, err := ident.PublicKey()
		if err != nil {
			if attempt == 0 {
				continue
			}
			return RefuseNoIdentity, fmt.Errorf("the signing key of %s: %w", did, err)
		}
		if err = commit.VerifySignature(key); err == nil {
			return "", nil
		} else if attempt == 1 {
			return RefuseBadSignature, fmt.Errorf("signature: %w", err)
		}
	}
	return RefuseBadSignature, errors.New("signature does not verify")
}

// changes returns the record changes of the commit's operations on the
// wanted collections, the records read from its verified blocks.
func (v *verifiedCommit) changes(ctx context.Context, wanted []string, received time.Time) ([]storage.Change, error) {
	var out []storage.Change
	for _, op := range v.msg.Ops {
		collection, rkey, ok := strings.Cut(op.Path, "/")
		if !ok {
			return nil, fmt.Errorf("invalid repository path %q", op.Path)
		}
		if !wantedCollection(wanted, collection) {
			continue
		}
		c := storage.Change{Op: storage.ChangeOp(op.Action), DID: v.msg.Repo, Collection: collection, RKey: rkey,
			Rev: v.msg.Rev, Received: received}
		switch c.Op {
		case storage.OpDelete:
		case storage.OpCreate, storage.OpUpdate:
			if op.Cid == nil {
				return nil, fmt.Errorf("%s of %s without a CID", op.Action, op.Path)
			}
			id := cid.Cid(*op.Cid)
			blk, err := v.repo.RecordStore.Get(ctx, id)
			if err != nil {
				return nil, fmt.Errorf("record %s: %w", op.Path, err)
			}
			data, err := atdata.UnmarshalCBOR(blk.RawData())
			if err != nil {
				return nil, fmt.Errorf("record %s: %w", op.Path, err)
			}
			if c.Record, err = json.Marshal(data); err != nil {
				return nil, fmt.Errorf("record %s: %w", op.Path, err)
			}
			c.CID = id.String()
		default:
			return nil, fmt.Errorf("unknown operation %q", op.Action)
		}
		out = append(out, c)
	}
	return out, nil
}

// repoCache holds what the firehose knows of each repository: the state
// it handed over last, or read from the sink (the ones handed over may not
// be stored yet: the writer commits in batches, so they are the
// authority), and whether the account is inactive, from the #account
// events it handed over or, before any, from the sink.
type repoCache struct {
	max   int
	repos map[string]repoEntry
}

// repoEntry is one repository in the cache.
type repoEntry struct {
	state storage.RepoState
	known bool // state holds the repository's state (else none is stored)
	// inactive is the account's status while it is inactive ("" while
	// active): its commits are skipped.
	inactive string
}

func newRepoCache(max int) *repoCache {
	return &repoCache{max: max, repos: make(map[string]repoEntry)}
}

// get returns what is known of did, reading the sink on a miss.
func (c *repoCache) get(ctx context.Context, sink CommitSink, did string) (repoEntry, error) {
	if e, ok := c.repos[did]; ok {
		return e, nil
	}
	var e repoEntry
	var err error
	if e.state, e.known, err = sink.RepoState(ctx, did); err != nil {
		return repoEntry{}, err
	}
	acct, ok, err := sink.AccountState(ctx, did)
	if err != nil {
		return repoEntry{}, err
	}
	if ok && !acct.Active {
		e.inactive = inactiveStatus(acct.Status)
	}
	c.set(did, e)
	return e, nil
}

// put remembers a repository's state.
func (c *repoCache) put(st storage.RepoState) {
	e := c.repos[st.DID]
	e.state, e.known = st, true
	c.set(st.DID, e)
}

// set remembers an entry. When full it forgets about half of the entries
// (those of a map iteration's start: no order), which are stored by then
// or soon; a state forgotten before its batch commits is read older from
// the store, and the repository's next commit then looks like a gap (an
// account status forgotten so, as active: the store still refuses the
// records of an account it holds as inactive).
func (c *repoCache) set(did string, e repoEntry) {
	if _, ok := c.repos[did]; !ok && len(c.repos) >= c.max {
		n := len(c.repos) / 2
		for d := range c.repos {
			if n == 0 {
				break
			}
			delete(c.repos, d)
			n--
		}
	}
	c.repos[did] = e
}

// inactiveStatus is the status recorded for an inactive account: its
// status, or "inactive" when the event gave none.
func inactiveStatus(status string) string {
	if status == "" {
		return "inactive"
	}
	return status
}
