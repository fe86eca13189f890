package simnet

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/bluesky-social/indigo/atproto/atcrypto"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/internal/repocar/repocartest"
)

// epoch is the time the simulated records were written from.
var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// tid is the TID at epoch plus micros, with clock id clock.
func tid(micros int64, clock uint) syntax.TID {
	return syntax.NewTID(epoch.UnixMicro()+micros, clock%1024)
}

// filler pads a record's text to about 300 bytes of JSON.
var filler = strings.Repeat("lorem ipsum ", 18)

// RKey is the record key of the i-th record of a collection of account a
// (records of a collection in key order by i).
func RKey(a Account, i int) string {
	return tid(int64(i)*1000, uint(a.Index)).String()
}

// Record is the i-th record of collection in account a.
func Record(a Account, collection string, i int) map[string]any {
	return map[string]any{
		"$type":     collection,
		"text":      fmt.Sprintf("record %d of %s %s", i, a.DID, filler),
		"createdAt": epoch.Add(time.Duration(i) * time.Millisecond).Format("2006-01-02T15:04:05.000Z"),
	}
}

// SigningKey is account a's repository signing key, derived from the
// seed so a plan drawn again signs alike.
func (p *Plan) SigningKey(a Account) (atcrypto.PrivateKey, error) {
	for salt := uint64(0); ; salt++ {
		var b [24]byte
		binary.BigEndian.PutUint64(b[:8], p.Spec.Seed)
		binary.BigEndian.PutUint64(b[8:16], uint64(a.Index))
		binary.BigEndian.PutUint64(b[16:], salt)
		sum := sha256.Sum256(b[:])
		key, err := atcrypto.ParsePrivateBytesK256(sum[:])
		if err == nil {
			return key, nil
		}
		if salt > 8 {
			return nil, fmt.Errorf("simnet: derive a signing key: %w", err)
		}
	}
}

// Export builds account a's repository export: a signed CAR of its
// records of both collections at its rev.
func (p *Plan) Export(ctx context.Context, a Account) ([]byte, error) {
	key, err := p.SigningKey(a)
	if err != nil {
		return nil, err
	}
	recs := make(map[string]map[string]any, a.Records+a.Other)
	for i := range a.Records {
		recs[p.Spec.Collection+"/"+RKey(a, i)] = Record(a, p.Spec.Collection, i)
	}
	for i := range a.Other {
		recs[p.Spec.Other+"/"+RKey(a, i)] = Record(a, p.Spec.Other, i)
	}
	car, err := repocartest.Build(ctx, syntax.DID(a.DID), key, a.Rev, recs)
	if err != nil {
		return nil, fmt.Errorf("simnet: export %s: %w", a.DID, err)
	}
	return car, nil
}
