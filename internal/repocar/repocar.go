// Package repocar reads an atproto repository exported as a CAR file
// (com.atproto.sync.getRepo) and verifies it before anything in it is
// believed: every block must hash to its CID, the commit must be
// well-formed, name the expected DID and carry a valid signature by the
// account's current #atproto key, and the MST must be complete and
// well-formed under the signed root. Only then are its records handed out.
//
// indigo's atproto/repo does the parsing (commit, MST); this package adds
// what loading an untrusted export needs: bounded input, block hashes, the
// signature against the DID document with one refresh for a rotated key,
// and a walk over the records of chosen collections.
package repocar

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/bluesky-social/indigo/atproto/atdata"
	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/repo"
	"github.com/bluesky-social/indigo/atproto/repo/mst"
	"github.com/bluesky-social/indigo/atproto/syntax"
	blocks "github.com/ipfs/go-block-format"
	"github.com/ipfs/go-cid"
	car "github.com/ipld/go-car"
	carutil "github.com/ipld/go-car/util"
)

// Errors that say why an export was refused. Each wraps the detail.
var (
	// ErrMalformed: the bytes are not a well-formed repository export.
	ErrMalformed = errors.New("malformed repository export")
	// ErrTooLarge: the export is larger than the bound.
	ErrTooLarge = errors.New("repository export too large")
	// ErrTampered: a block does not hash to its CID, or the MST is
	// incomplete under the signed root.
	ErrTampered = errors.New("repository export does not match its hashes")
	// ErrWrongRepo: the commit names another DID.
	ErrWrongRepo = errors.New("repository export is of another account")
	// ErrBadSignature: the commit's signature does not verify against the
	// account's current signing key.
	ErrBadSignature = errors.New("commit signature does not verify")
	// ErrIdentity: the account's DID document could not be read or holds
	// no usable signing key.
	ErrIdentity = errors.New("cannot resolve the account's signing key")
)

// An error of Load or Read that matches none of the errors above is a
// failure of the reader itself (a connection reset, a download cut short,
// a timeout): it wraps the reader's error and says nothing of the export,
// so the caller may read it again.

// Repo is a verified repository export.
type Repo struct {
	// Commit is the signed commit at the export's root.
	Commit *repo.Commit
	tree   *mst.Tree
	blocks *repo.TinyBlockstore
}

// Rev is the commit's revision.
func (r *Repo) Rev() string { return r.Commit.Rev }

// Load reads a CAR export of did's repository from rd (at most limit
// bytes), checks every block's hash, the commit's structure and DID, and
// the MST under the commit, and verifies the signature with dir (see
// VerifySignature). The returned Repo holds the whole export in memory.
func Load(ctx context.Context, rd io.Reader, did syntax.DID, limit int64, dir identity.Directory) (*Repo, error) {
	r, err := Read(ctx, rd, limit)
	if err != nil {
		return nil, err
	}
	if r.Commit.DID != did.String() {
		return nil, fmt.Errorf("%w: the commit is by %s, not %s", ErrWrongRepo, r.Commit.DID, did)
	}
	if err := VerifySignature(ctx, dir, did, r.Commit); err != nil {
		return nil, err
	}
	return r, nil
}

// Read parses and hash-checks a CAR export (at most limit bytes) without
// verifying the commit's signature or DID: Load does both. It is for
// callers that verify the signature their own way.
func Read(ctx context.Context, rd io.Reader, limit int64) (*Repo, error) {
	lr := &limitedReader{r: rd, left: limit}
	br := bufio.NewReaderSize(lr, 64<<10)
	header, err := car.ReadHeader(br)
	if err != nil {
		return nil, readErr(lr, err)
	}
	if header.Version != 1 || len(header.Roots) == 0 {
		return nil, fmt.Errorf("%w: CAR version %d with %d roots", ErrMalformed, header.Version, len(header.Roots))
	}
	root := header.Roots[0]
	bs := repo.NewTinyBlockstore()
	for {
		// The blocks are read as they are and their hashes checked here
		// (checkHash), so that a mismatch is told from malformed bytes.
		c, data, err := carutil.ReadNode(br)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, readErr(lr, err)
		}
		blk, err := blocks.NewBlockWithCid(data, c)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		if err := checkHash(blk); err != nil {
			return nil, err
		}
		if err := bs.Put(ctx, blk); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
	}
	commitBlock, err := bs.Get(ctx, root)
	if err != nil {
		return nil, fmt.Errorf("%w: the root commit block is missing", ErrMalformed)
	}
	var commit repo.Commit
	if err := commit.UnmarshalCBOR(bytes.NewReader(commitBlock.RawData())); err != nil {
		return nil, fmt.Errorf("%w: commit: %w", ErrMalformed, err)
	}
	if err := commit.VerifyStructure(); err != nil {
		return nil, fmt.Errorf("%w: commit: %w", ErrMalformed, err)
	}
	tree, err := mst.LoadTreeFromStore(ctx, bs, commit.Data)
	if err != nil {
		return nil, fmt.Errorf("%w: MST: %w", ErrTampered, err)
	}
	if tree.IsPartial() {
		return nil, fmt.Errorf("%w: the MST is incomplete", ErrTampered)
	}
	if err := tree.Verify(); err != nil {
		return nil, fmt.Errorf("%w: MST: %w", ErrTampered, err)
	}
	return &Repo{Commit: &commit, tree: tree, blocks: bs}, nil
}

// checkHash verifies that a block's bytes hash to its CID: the CAR reader
// takes the CID on trust.
func checkHash(blk blocks.Block) error {
	c := blk.Cid()
	sum, err := c.Prefix().Sum(blk.RawData())
	if err != nil {
		return fmt.Errorf("%w: block %s: %w", ErrMalformed, c, err)
	}
	if !sum.Equals(c) {
		return fmt.Errorf("%w: block %s hashes to %s", ErrTampered, c, sum)
	}
	return nil
}

// readErr names a read failure: the bound, the reader's own failure, or
// malformed input.
func readErr(lr *limitedReader, err error) error {
	switch {
	case lr.over:
		return fmt.Errorf("%w: more than %d bytes", ErrTooLarge, lr.limit())
	case lr.failed != nil:
		return fmt.Errorf("read repository export: %w", lr.failed)
	}
	return fmt.Errorf("%w: %w", ErrMalformed, err)
}

// VerifySignature checks commit's signature against did's current
// #atproto key from dir. When it does not verify, the DID document is
// read again once (the account may have rotated its key since it was
// cached) and the signature checked against the fresh key.
func VerifySignature(ctx context.Context, dir identity.Directory, did syntax.DID, commit *repo.Commit) error {
	check := func() error {
		ident, err := dir.LookupDID(ctx, did)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrIdentity, err)
		}
		key, err := ident.PublicKey()
		if err != nil {
			return fmt.Errorf("%w: %w", ErrIdentity, err)
		}
		if err := commit.VerifySignature(key); err != nil {
			return fmt.Errorf("%w: %w", ErrBadSignature, err)
		}
		return nil
	}
	err := check()
	if err == nil || ctx.Err() != nil {
		return err
	}
	if perr := dir.Purge(ctx, did.AtIdentifier()); perr != nil {
		return err
	}
	return check()
}

// JSON renders the record as atproto JSON ($link, $bytes and blob
// objects as the data model maps them).
func (r Record) JSON() ([]byte, error) {
	obj, err := atdata.UnmarshalCBOR(r.CBOR)
	if err != nil {
		return nil, fmt.Errorf("%w: record %s/%s: %w", ErrMalformed, r.Collection, r.RKey, err)
	}
	return json.Marshal(obj)
}

// Record is one record of a repository export.
type Record struct {
	Collection string
	RKey       string
	CID        cid.Cid
	// CBOR is the record's DAG-CBOR block, hash-checked.
	CBOR []byte
}

// Records calls fn for each record of the export whose collection wanted
// reports true for (every record when wanted is nil), in key order. It
// stops at fn's first error and returns it. A record whose block the
// export lacks is an ErrTampered error.
func (r *Repo) Records(ctx context.Context, wanted func(collection string) bool, fn func(Record) error) error {
	return r.tree.Walk(func(key []byte, val cid.Cid) error {
		collection, rkey, ok := strings.Cut(string(key), "/")
		if !ok {
			return fmt.Errorf("%w: MST key %q is not collection/rkey", ErrMalformed, key)
		}
		if wanted != nil && !wanted(collection) {
			return nil
		}
		blk, err := r.blocks.Get(ctx, val)
		if err != nil {
			return fmt.Errorf("%w: the block of %s is missing", ErrTampered, key)
		}
		return fn(Record{Collection: collection, RKey: rkey, CID: val, CBOR: blk.RawData()})
	})
}

// limitedReader reads at most left bytes and then fails, noting that the
// bound was passed. It also notes the first error of the reader other
// than io.EOF (failed), so that a broken input is not taken for a
// malformed export.
type limitedReader struct {
	r      io.Reader
	left   int64
	read   int64
	over   bool
	failed error
}

func (l *limitedReader) limit() int64 { return l.read + l.left }

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// One byte more proves the input is longer than the bound.
		var one [1]byte
		if n, _ := l.r.Read(one[:]); n > 0 {
			l.over = true
			return 0, ErrTooLarge
		}
		return 0, io.EOF
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	l.read += int64(n)
	if err != nil && !errors.Is(err, io.EOF) && l.failed == nil {
		l.failed = err
	}
	return n, err
}
