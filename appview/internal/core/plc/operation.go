// Package plc builds, signs and submits did:plc operations, and reads a
// DID's state from a PLC directory.
//
// An operation is signed over its DAG-CBOR encoding without the sig field;
// the signature is the raw 64-byte low-S ECDSA signature (atcrypto signs
// low-S), base64url without padding. A genesis operation's DID is
// "did:plc:" + the first 24 characters of the base32 (lower case, no
// padding) SHA-256 of the signed operation's DAG-CBOR; a later operation
// names its predecessor by the CID (DAG-CBOR, SHA-256) of the signed
// predecessor.
package plc

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/bluesky-social/indigo/atproto/atcrypto"
	"github.com/bluesky-social/indigo/atproto/atdata"
	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"
)

// Service is a service of a DID: what the DID document lists as
// {id: DID#name, type, serviceEndpoint}.
type Service struct {
	Type     string `json:"type"`
	Endpoint string `json:"endpoint"`
}

// Operation is a plc_operation: the whole state of a DID after it.
type Operation struct {
	Type string `json:"type"`
	// RotationKeys are did:key strings, highest authority first.
	RotationKeys []string `json:"rotationKeys"`
	// VerificationMethods map a fragment (without #) to a did:key.
	VerificationMethods map[string]string `json:"verificationMethods"`
	// AlsoKnownAs are URIs such as at://handle.
	AlsoKnownAs []string `json:"alsoKnownAs"`
	// Services map a fragment (without #) to a service.
	Services map[string]Service `json:"services"`
	// Prev is the CID of the previous operation; nil for a genesis.
	Prev *string `json:"prev"`
	// Sig is the signature; "" until Sign.
	Sig string `json:"sig,omitempty"`
}

// TypeOperation is the type of an Operation.
const TypeOperation = "plc_operation"

// State is a DID's state without the chain fields: what GET
// /{did}/data answers, and what an Operation sets.
type State struct {
	DID                 string             `json:"did"`
	RotationKeys        []string           `json:"rotationKeys"`
	VerificationMethods map[string]string  `json:"verificationMethods"`
	AlsoKnownAs         []string           `json:"alsoKnownAs"`
	Services            map[string]Service `json:"services"`
}

// Next returns the unsigned operation that sets s after the operation
// whose CID is prev ("" for a genesis).
func (s State) Next(prev string) *Operation {
	op := &Operation{
		Type:                TypeOperation,
		RotationKeys:        slices.Clone(s.RotationKeys),
		VerificationMethods: maps.Clone(s.VerificationMethods),
		AlsoKnownAs:         slices.Clone(s.AlsoKnownAs),
		Services:            maps.Clone(s.Services),
	}
	for _, p := range []*[]string{&op.RotationKeys, &op.AlsoKnownAs} {
		if *p == nil {
			*p = []string{}
		}
	}
	if op.VerificationMethods == nil {
		op.VerificationMethods = map[string]string{}
	}
	if op.Services == nil {
		op.Services = map[string]Service{}
	}
	if prev != "" {
		op.Prev = &prev
	}
	return op
}

// data is op as atproto data for DAG-CBOR, with or without its sig.
func (op *Operation) data(withSig bool) map[string]any {
	services := make(map[string]any, len(op.Services))
	for name, s := range op.Services {
		services[name] = map[string]any{"type": s.Type, "endpoint": s.Endpoint}
	}
	methods := make(map[string]any, len(op.VerificationMethods))
	for name, key := range op.VerificationMethods {
		methods[name] = key
	}
	m := map[string]any{
		"type":                op.Type,
		"rotationKeys":        anySlice(op.RotationKeys),
		"verificationMethods": methods,
		"alsoKnownAs":         anySlice(op.AlsoKnownAs),
		"services":            services,
		"prev":                nil,
	}
	if op.Prev != nil {
		m["prev"] = *op.Prev
	}
	if withSig {
		m["sig"] = op.Sig
	}
	return m
}

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// UnsignedBytes is the DAG-CBOR encoding a signature covers.
func (op *Operation) UnsignedBytes() ([]byte, error) {
	return atdata.MarshalCBOR(op.data(false))
}

// Sign signs op with key, which must be one of the rotation keys in force
// (those of the previous operation, or op's own for a genesis).
func (op *Operation) Sign(key atcrypto.PrivateKey) error {
	unsigned, err := op.UnsignedBytes()
	if err != nil {
		return fmt.Errorf("encode plc operation: %w", err)
	}
	sig, err := key.HashAndSign(unsigned)
	if err != nil {
		return fmt.Errorf("sign plc operation: %w", err)
	}
	op.Sig = base64.RawURLEncoding.EncodeToString(sig)
	return nil
}

// Verify checks op's signature against a did:key, requiring low-S as PLC
// directories do.
func (op *Operation) Verify(didKey string) error {
	pub, err := atcrypto.ParsePublicDIDKey(didKey)
	if err != nil {
		return fmt.Errorf("rotation key: %w", err)
	}
	sig, err := base64.RawURLEncoding.DecodeString(op.Sig)
	if err != nil {
		return fmt.Errorf("signature: %w", err)
	}
	unsigned, err := op.UnsignedBytes()
	if err != nil {
		return err
	}
	return pub.HashAndVerify(unsigned, sig)
}

// signedBytes is the DAG-CBOR encoding of the signed operation.
func (op *Operation) signedBytes() ([]byte, error) {
	if op.Sig == "" {
		return nil, errors.New("plc operation is not signed")
	}
	return atdata.MarshalCBOR(op.data(true))
}

// CID is the CID the next operation names as prev.
func (op *Operation) CID() (string, error) {
	b, err := op.signedBytes()
	if err != nil {
		return "", err
	}
	h, err := multihash.Sum(b, multihash.SHA2_256, -1)
	if err != nil {
		return "", err
	}
	return cid.NewCidV1(cid.DagCBOR, h).String(), nil
}

var didEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// DID is the did:plc a signed genesis operation creates.
func (op *Operation) DID() (string, error) {
	if op.Prev != nil {
		return "", errors.New("only a genesis operation names a new DID")
	}
	b, err := op.signedBytes()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	enc := didEncoding.EncodeToString(sum[:])
	return "did:plc:" + strings.ToLower(enc[:24]), nil
}
