package backfilltest

import (
	"context"
	"net/http"
	"strconv"

	"github.com/bluesky-social/indigo/atproto/atcrypto"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/internal/repocar/repocartest"
)

// exports is the PDS stand-in's com.atproto.sync.getRepo: a repository
// whose signing key was given (ServeRepo) is exported as a signed CAR of
// its current records and rev; any other answers 501 MethodNotImplemented,
// as a PDS that does not offer the method would.
type exports struct {
	keys    map[string]atcrypto.PrivateKey // by DID
	spoiled map[string]repocartest.Spoil   // by DID
	built   map[string][]byte              // exports built since the last change, by DID
	cuts    map[string]int                 // answers still to cut short, by DID
	calls   int
}

// ServeRepo makes getRepo export did's repository signed with key.
// Register the key's public half in the DID document (PLC.AddKey).
func (p *PDS) ServeRepo(did string, key atcrypto.PrivateKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exports.keys == nil {
		p.exports.keys = map[string]atcrypto.PrivateKey{}
	}
	p.exports.keys[did] = key
	delete(p.exports.built, did)
}

// SpoilRepo damages did's getRepo exports as spoil says.
func (p *PDS) SpoilRepo(did string, spoil repocartest.Spoil) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exports.spoiled == nil {
		p.exports.spoiled = map[string]repocartest.Spoil{}
	}
	p.exports.spoiled[did] = spoil
	delete(p.exports.built, did)
}

// CutRepo cuts the next times getRepo answers for did short: each sends
// 200 with the whole export's Content-Length and half of its bytes, then
// drops the connection, as a network failure mid-download does.
func (p *PDS) CutRepo(did string, times int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exports.cuts == nil {
		p.exports.cuts = map[string]int{}
	}
	p.exports.cuts[did] = times
}

// GetRepoCalls returns how many getRepo requests were answered 200
// (including those cut short).
func (p *PDS) GetRepoCalls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exports.calls
}

func (p *PDS) getRepo(w http.ResponseWriter, r *http.Request) {
	p.wait()
	did := r.URL.Query().Get("did")
	p.mu.Lock()
	key, ok := p.exports.keys[did]
	car, built := p.exports.built[did]
	spoil := p.exports.spoiled[did]
	rev := p.revs[did]
	cut := ok && p.exports.cuts[did] > 0
	if cut {
		p.exports.cuts[did]--
	}
	recs := map[string]map[string]any{}
	if ok && !built {
		for collection, list := range p.repos[did] {
			for _, rec := range list {
				recs[collection+"/"+rec.RKey] = rec.Value
			}
		}
	}
	if ok {
		p.exports.calls++
	}
	p.mu.Unlock()
	if !ok {
		xrpcError(w, http.StatusNotImplemented, "MethodNotImplemented", "Method Not Implemented")
		return
	}
	if !built {
		var err error
		car, err = repocartest.BuildSpoiled(context.Background(), syntax.DID(did), key, rev, recs, spoil)
		if err != nil {
			xrpcError(w, http.StatusInternalServerError, "InternalServerError", err.Error())
			return
		}
		p.mu.Lock()
		if p.exports.built == nil {
			p.exports.built = map[string][]byte{}
		}
		p.exports.built[did] = car
		p.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/vnd.ipld.car")
	if cut {
		w.Header().Set("Content-Length", strconv.Itoa(len(car)))
		_, _ = w.Write(car[:len(car)/2])
		http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler) // drops the connection without logging
	}
	_, _ = w.Write(car)
}
