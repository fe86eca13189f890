// Package repocartest builds signed atproto repository exports (CAR
// files, as com.atproto.sync.getRepo answers) for tests, with indigo's
// MST and commit code, and can spoil them in the ways a verifier must
// catch.
package repocartest

import (
	"bytes"
	"context"
	"fmt"
	"sort"

	"github.com/bluesky-social/indigo/atproto/atcrypto"
	"github.com/bluesky-social/indigo/atproto/atdata"
	"github.com/bluesky-social/indigo/atproto/repo"
	"github.com/bluesky-social/indigo/atproto/repo/mst"
	"github.com/bluesky-social/indigo/atproto/syntax"
	blocks "github.com/ipfs/go-block-format"
	"github.com/ipfs/go-cid"
	"github.com/ipfs/go-datastore"
	blockstore "github.com/ipfs/go-ipfs-blockstore"
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
	bs := blockstore.NewBlockstore(datastore.NewMapDatastore())
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

	var out bytes.Buffer
	if err := car.WriteHeader(&car.CarHeader{Roots: []cid.Cid{commitCID}, Version: 1}, &out); err != nil {
		return nil, err
	}
	if err := carutil.LdWrite(&out, commitCID.Bytes(), cb.Bytes()); err != nil {
		return nil, err
	}
	all, err := bs.AllKeysChan(ctx)
	if err != nil {
		return nil, err
	}
	for raw := range all {
		// The blockstore keys blocks by multihash and lists them as raw
		// CIDs: every block here is DAG-CBOR.
		c := cid.NewCidV1(cid.DagCBOR, raw.Hash())
		blk, err := bs.Get(ctx, c)
		if err != nil {
			return nil, err
		}
		data := blk.RawData()
		if spoil.DropRecord != "" && c.Equals(recordBlocks[spoil.DropRecord]) {
			continue
		}
		if spoil.TamperRecord != "" && c.Equals(recordBlocks[spoil.TamperRecord]) {
			data = append(bytes.Clone(data[:len(data)-1]), data[len(data)-1]^0x01)
		}
		if err := carutil.LdWrite(&out, c.Bytes(), data); err != nil {
			return nil, err
		}
	}
	return out.Bytes(), nil
}
