// Package repocartest builds signed atproto repository exports (CAR
// files, as com.atproto.sync.getRepo answers) for tests, with indigo's
// MST and commit code, and can spoil them in the ways a verifier must
// catch.
package repocartest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/bluesky-social/indigo/atproto/atcrypto"
	"github.com/bluesky-social/indigo/atproto/atdata"
	"github.com/bluesky-social/indigo/atproto/repo"
	"github.com/bluesky-social/indigo/atproto/repo/mst"
	"github.com/bluesky-social/indigo/atproto/syntax"
	blocks "github.com/ipfs/go-block-format"
	"github.com/ipfs/go-cid"
	ipld "github.com/ipfs/go-ipld-format"
	car "github.com/ipld/go-car"
	carutil "github.com/ipld/go-car/util"
	"github.com/multiformats/go-multihash"
)

// Spoil says how to damage an export.
type Spoil struct {
	// TamperRecord changes the bytes of this record's block
	// ("collection/rkey") and keeps its CID.
	TamperRecord string
	// DropRecord leaves this record's block out of the export.
	DropRecord string
	// SignWith signs the commit with this key instead of the account's.
	SignWith atcrypto.PrivateKey
}

// cidBuilder makes the CIDs of atproto blocks: CIDv1, DAG-CBOR, SHA-256.
var cidBuilder = cid.V1Builder{Codec: cid.DagCBOR, MhType: multihash.SHA2_256}

// Build exports a repository of did at rev holding records (keyed
// "collection/rkey", values atproto data as JSON-style maps), signed with
// key, as a CAR file.
func Build(ctx context.Context, did syntax.DID, key atcrypto.PrivateKey, rev string, records map[string]map[string]any) ([]byte, error) {
	return BuildSpoiled(ctx, did, key, rev, records, Spoil{})
}

// BuildSpoiled is Build, damaged as spoil says.
func BuildSpoiled(ctx context.Context, did syntax.DID, key atcrypto.PrivateKey, rev string, records map[string]map[string]any, spoil Spoil) ([]byte, error) {
	bs := &MemBlocks{}
	tree := mst.NewEmptyTree()
	recordBlocks := map[string]cid.Cid{}
	keys := make([]string, 0, len(records))
	for k := range records {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		data, err := atdata.MarshalCBOR(records[k])
		if err != nil {
			return nil, fmt.Errorf("record %s: %w", k, err)
		}
		c, err := cidBuilder.Sum(data)
		if err != nil {
			return nil, err
		}
		blk, err := blocks.NewBlockWithCid(data, c)
		if err != nil {
			return nil, err
		}
		if err := bs.Put(ctx, blk); err != nil {
			return nil, err
		}
		if _, err := tree.Insert([]byte(k), c); err != nil {
			return nil, fmt.Errorf("record %s: %w", k, err)
		}
		recordBlocks[k] = c
	}
	root, err := tree.WriteDiffBlocks(ctx, bs)
	if err != nil {
		return nil, err
	}
	commit := repo.Commit{DID: did.String(), Version: repo.ATPROTO_REPO_VERSION, Data: *root, Rev: rev}
	signer := key
	if spoil.SignWith != nil {
		signer = spoil.SignWith
	}
	if err := commit.Sign(signer); err != nil {
		return nil, err
	}
	var cb bytes.Buffer
	if err := commit.MarshalCBOR(&cb); err != nil {
		return nil, err
	}
	commitCID, err := cidBuilder.Sum(cb.Bytes())
	if err != nil {
		return nil, err
	}

	all := []blocks.Block{}
	commitBlock, err := blocks.NewBlockWithCid(cb.Bytes(), commitCID)
	if err != nil {
		return nil, err
	}
	all = append(all, commitBlock)
	for _, blk := range bs.List() {
		c := blk.Cid()
		data := blk.RawData()
		if spoil.DropRecord != "" && c.Equals(recordBlocks[spoil.DropRecord]) {
			continue
		}
		if spoil.TamperRecord != "" && c.Equals(recordBlocks[spoil.TamperRecord]) {
			data = append(bytes.Clone(data[:len(data)-1]), data[len(data)-1]^0x01)
			all = append(all, rawBlock{c: c, data: data})
			continue
		}
		all = append(all, blk)
	}
	return WriteCAR(commitCID, all)
}

// rawBlock is a block written under a CID its bytes do not hash to.
type rawBlock struct {
	c    cid.Cid
	data []byte
}

func (b rawBlock) RawData() []byte          { return b.data }
func (b rawBlock) Cid() cid.Cid             { return b.c }
func (b rawBlock) String() string           { return b.c.String() }
func (b rawBlock) Loggable() map[string]any { return map[string]any{"block": b.c.String()} }

// WriteCAR writes blks as a CAR file whose root is root, in order.
func WriteCAR(root cid.Cid, blks []blocks.Block) ([]byte, error) {
	var buf bytes.Buffer
	if err := car.WriteHeader(&car.CarHeader{Roots: []cid.Cid{root}, Version: 1}, &buf); err != nil {
		return nil, err
	}
	for _, b := range blks {
		if err := carutil.LdWrite(&buf, b.Cid().Bytes(), b.RawData()); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// MemBlocks is an in-memory blockstore, the one the MST writes its nodes
// to (mst.Tree.WriteDiffBlocks); it keeps blocks in the order they came.
type MemBlocks struct {
	list  []blocks.Block
	index map[cid.Cid]int
}

// List returns the blocks in the order they were put.
func (m *MemBlocks) List() []blocks.Block { return m.list }

// Put stores a block.
func (m *MemBlocks) Put(_ context.Context, b blocks.Block) error {
	if m.index == nil {
		m.index = map[cid.Cid]int{}
	}
	if _, ok := m.index[b.Cid()]; ok {
		return nil
	}
	m.index[b.Cid()] = len(m.list)
	m.list = append(m.list, b)
	return nil
}

// PutMany stores blocks.
func (m *MemBlocks) PutMany(ctx context.Context, bs []blocks.Block) error {
	for _, b := range bs {
		_ = m.Put(ctx, b)
	}
	return nil
}

// Get returns a block.
func (m *MemBlocks) Get(_ context.Context, c cid.Cid) (blocks.Block, error) {
	if i, ok := m.index[c]; ok {
		return m.list[i], nil
	}
	return nil, ipld.ErrNotFound{Cid: c}
}

// Has reports whether a block is stored.
func (m *MemBlocks) Has(ctx context.Context, c cid.Cid) (bool, error) {
	_, ok := m.index[c]
	return ok, nil
}

// GetSize returns a block's size.
func (m *MemBlocks) GetSize(ctx context.Context, c cid.Cid) (int, error) {
	b, err := m.Get(ctx, c)
	if err != nil {
		return 0, err
	}
	return len(b.RawData()), nil
}

// DeleteBlock removes a block.
func (m *MemBlocks) DeleteBlock(_ context.Context, c cid.Cid) error {
	i, ok := m.index[c]
	if !ok {
		return nil
	}
	m.list = slices.Delete(m.list, i, i+1)
	m.index = map[cid.Cid]int{}
	for j, b := range m.list {
		m.index[b.Cid()] = j
	}
	return nil
}

// AllKeysChan lists the blocks' CIDs.
func (m *MemBlocks) AllKeysChan(context.Context) (<-chan cid.Cid, error) {
	ch := make(chan cid.Cid, len(m.list))
	for _, b := range m.list {
		ch <- b.Cid()
	}
	close(ch)
	return ch, nil
}

// HashOnRead is a no-op: the blocks are the test's own.
func (m *MemBlocks) HashOnRead(bool) {}
