package backfilltest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bluesky-social/indigo/atproto/atcrypto"
	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"
)

// PLC is a DID PLC directory stand-in: GET /{did} answers the DID document
// of an account added with Add, naming its PDS, and 404 for any other DID.
// Its methods are safe for concurrent use.
type PLC struct {
	srv *httptest.Server

	mu   sync.Mutex
	docs map[string]identity.DIDDocument
}

// NewPLC starts a PLC stand-in for the rest of the test.
func NewPLC(t testing.TB) *PLC {
	p := StartPLC()
	t.Cleanup(p.Close)
	return p
}

// StartPLC starts a PLC stand-in outside a test; stop it with Close.
func StartPLC() *PLC {
	p := &PLC{docs: map[string]identity.DIDDocument{}}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		doc, ok := p.docs[strings.TrimPrefix(r.URL.Path, "/")]
		p.mu.Unlock()
		if !ok {
			xrpcError(w, http.StatusNotFound, "NotFound", "DID not registered")
			return
		}
		writeJSON(w, doc)
	}))
	return p
}

// URL is the directory's base URL (a PLC_URL).
func (p *PLC) URL() string { return p.srv.URL }

// Close stops the stand-in (NewPLC does so when the test ends).
func (p *PLC) Close() { p.srv.Close() }

// Add registers did with a document whose #atproto_pds service is pdsURL
// (no service at all when pdsURL is ""), replacing any earlier document of
// did.
func (p *PLC) Add(did, pdsURL string) { p.AddKey(did, pdsURL, nil) }

// AddKey is Add with a #atproto signing key in the document (none when
// key is nil).
func (p *PLC) AddKey(did, pdsURL string, key atcrypto.PublicKey) {
	doc := identity.DIDDocument{DID: syntax.DID(did)}
	if key != nil {
		doc.VerificationMethod = []identity.DocVerificationMethod{{
			ID: did + "#atproto", Type: "Multikey", Controller: did, PublicKeyMultibase: key.Multibase(),
		}}
	}
	if pdsURL != "" {
		doc.Service = []identity.DocService{{ID: "#atproto_pds", Type: "AtprotoPersonalDataServer", ServiceEndpoint: pdsURL}}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.docs[did] = doc
}

// Directory resolves DIDs through the stand-in (handles are not verified).
func (p *PLC) Directory() identity.Directory {
	return &identity.BaseDirectory{PLCURL: p.srv.URL, SkipHandleVerification: true, HTTPClient: http.Client{Timeout: 5 * time.Second}}
}
