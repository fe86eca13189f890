package repocar

import (
	"fmt"

	"github.com/bluesky-social/indigo/atproto/atdata"
	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"
)

// RecordCID is the CID a repository gives the record whose JSON form is
// value: CIDv1, DAG-CBOR, SHA-256 of its DAG-CBOR encoding (blobs, bytes
// and links in their JSON forms become their CBOR kinds). It is what a
// PDS answers for the record, so an import without a CID gets the one the
// network would show.
func RecordCID(value []byte) (string, error) {
	obj, err := atdata.UnmarshalJSON(value)
	if err != nil {
		return "", fmt.Errorf("record: %w", err)
	}
	block, err := atdata.MarshalCBOR(obj)
	if err != nil {
		return "", fmt.Errorf("record: %w", err)
	}
	c, err := cid.V1Builder{Codec: cid.DagCBOR, MhType: multihash.SHA2_256}.Sum(block)
	if err != nil {
		return "", fmt.Errorf("record: %w", err)
	}
	return c.String(), nil
}
