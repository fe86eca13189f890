package backfill_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"
)

// A PLC directory stand-in on 127.0.0.1 (the PDS and relay stand-ins are
// in backfilltest).

func xrpcError(w http.ResponseWriter, status int, name, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": name, "message": msg})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// plc serves DID documents.
type plc struct {
	srv  *httptest.Server
	mu   sync.Mutex
	docs map[string]identity.DIDDocument
}

func newPLC(t testing.TB) *plc {
	p := &plc{docs: map[string]identity.DIDDocument{}}
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
	t.Cleanup(p.srv.Close)
	return p
}

func (p *plc) add(did, pds string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.docs[did] = identity.DIDDocument{
		DID:     syntax.DID(did),
		Service: []identity.DocService{{ID: "#atproto_pds", Type: "AtprotoPersonalDataServer", ServiceEndpoint: pds}},
	}
}

// directory resolves through the PLC stand-in.
func (p *plc) directory() identity.Directory {
	return &identity.BaseDirectory{PLCURL: p.srv.URL, SkipHandleVerification: true, HTTPClient: http.Client{Timeout: 5 * time.Second}}
}
