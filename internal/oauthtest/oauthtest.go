// Package oauthtest is a stand-in for a user's PDS and its OAuth
// authorization server, for tests and benchmarks: an HTTP server on
// 127.0.0.1 that checks DPoP as a PDS does (proof signature, htm, htu
// equal to its own URL, ath, jti replay, iat window, server nonces),
// accepts only the opaque access tokens it issued and only with the key
// they are bound to, refreshes tokens at /oauth/token (DPoP-bound,
// nonce-demanding, rotating refresh tokens and refusing reused ones), and
// serves the repository XRPC methods Lexview proxies: createRecord,
// putRecord, getRecord, uploadBlob and getSession.
//
// The PDS and the authorization server share the one origin, as on a
// self-hosted PDS: Server.URL is both the PDS URL and the issuer.
package oauthtest

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lexview/lexview/oauth"
)

// Options tune a Server. The zero value is usable.
type Options struct {
	// Now is the clock of proofs and tokens; default time.Now.
	Now func() time.Time
	// TokenLifetime is the access tokens' lifetime (expires_in); default
	// one hour.
	TokenLifetime time.Duration
	// NonceRotation rotates the nonce when it is older than this; 0 means
	// only RotateNonce rotates it.
	NonceRotation time.Duration
	// AcceptPreviousNonce makes the nonce in use before the last rotation
	// acceptable too, as real servers do for a while; by default only the
	// current nonce passes.
	AcceptPreviousNonce bool
	// ClientID, when set, is the client_id refresh grants must carry.
	ClientID string
	// RequireClientAssertion makes refresh grants require a JWT-bearer
	// client assertion, each used once.
	RequireClientAssertion bool
	// VerifyClientAssertion, when set, checks each client assertion.
	VerifyClientAssertion func(assertion string) error
	// MisreportWrite, when set, rewrites what createRecord and putRecord
	// answer (the stored record is unchanged): a PDS that lies.
	MisreportWrite func(Record) Record
	// MaxBlobSize bounds uploadBlob bodies; default 50 MB.
	MaxBlobSize int64
}

// Stats counts what the server saw.
type Stats struct {
	Requests         int64 // every HTTP request
	NonceChallenges  int64 // use_dpop_nonce answers (PDS and token endpoint)
	ProofRejections  int64 // proofs refused (signature, htm, htu, iat, ath, replay)
	TokenRejections  int64 // access tokens refused (unknown, other key, expired)
	TokenRequests    int64 // requests to the token endpoint
	Refreshes        int64 // refresh grants that issued tokens
	MetadataRequests int64 // authorization-server metadata fetches
	Blobs            int64 // blobs stored
	BlobBytes        int64 // bytes of the blobs stored
}

// Record is a record stored in the stand-in's repositories.
type Record struct {
	DID, Collection, Rkey string
	URI, CID, Rev         string
	Value                 json.RawMessage // with its $type
}

// Operation is one repository write the stand-in made through XRPC
// (createRecord, putRecord, deleteRecord), in the order it made them.
type Operation struct {
	// Action is "create" (createRecord), "update" (putRecord) or
	// "delete" (deleteRecord).
	Action string
	// Record is the record written; a delete's has no CID and no Value.
	Record
}

// Blob is an uploaded blob's metadata (the bytes are not kept).
type Blob struct {
	DID, CID, MimeType string
	Size               int64
}

type accessToken struct {
	did, jkt string
	expires  time.Time
	expired  bool
}

type refreshToken struct {
	did, jkt, scope string
	used            bool
}

type failure struct {
	status  int
	errName string
	message string
}

// Server is the stand-in. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL (http://127.0.0.1:PORT): the PDS URL and the
	// authorization server's issuer.
	URL string

	opts     Options
	srv      *httptest.Server
	verifier *oauth.Verifier

	requests, nonceChallenges, proofRejections, tokenRejections  atomic.Int64
	tokenRequests, refreshes, metadataRequests, blobs, blobBytes atomic.Int64

	mu          sync.Mutex
	nonce, prev string
	nonceAt     time.Time
	access      map[string]*accessToken
	refresh     map[string]*refreshToken
	assertions  map[string]bool
	records     map[string]*Record // by AT URI
	order       []string           // AT URIs in first-write order
	writes      []Record           // every successful write, in order
	ops         []Operation        // every XRPC write, deletes included, in order
	blobList    []Blob
	handles     map[string]string
	calls       map[string]int64
	failNext    map[string]failure
	lastTID     int64
}

// New starts a stand-in for a test and closes it when the test ends.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	s := Start(opts)
	t.Cleanup(s.Close)
	return s
}

// Start starts a stand-in outside a test (benchmarks, tools). Stop it with
// Close.
func Start(opts Options) *Server {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.TokenLifetime <= 0 {
		opts.TokenLifetime = time.Hour
	}
	if opts.MaxBlobSize <= 0 {
		opts.MaxBlobSize = 50 << 20
	}
	s := &Server{
		opts:       opts,
		verifier:   oauth.NewVerifier(oauth.VerifierOptions{Now: opts.Now}),
		nonce:      randomToken(""),
		nonceAt:    opts.Now(),
		access:     make(map[string]*accessToken),
		refresh:    make(map[string]*refreshToken),
		assertions: make(map[string]bool),
		records:    make(map[string]*Record),
		handles:    make(map[string]string),
		calls:      make(map[string]int64),
		failNext:   make(map[string]failure),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.serveASMetadata)
	mux.HandleFunc("GET /.well-known/oauth-protected-resource", s.serveRSMetadata)
	mux.HandleFunc("/oauth/token", s.serveToken)
	mux.HandleFunc("/xrpc/{nsid}", s.serveXRPC)
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		mux.ServeHTTP(w, r)
	}))
	s.URL = s.srv.URL
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Client returns an HTTP client for the server (httptest's).
func (s *Server) Client() *http.Client { return s.srv.Client() }

// IssueTokens issues an access token and a refresh token for did, bound to
// the DPoP key with thumbprint jkt, with scope "atproto
// transition:generic": the outcome of a sign-in.
func (s *Server) IssueTokens(did, jkt string) (access, refresh string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.issueLocked(did, jkt, "atproto transition:generic")
}

func (s *Server) issueLocked(did, jkt, scope string) (string, string) {
	access, refresh := randomToken("at_"), randomToken("rt_")
	s.access[access] = &accessToken{did: did, jkt: jkt, expires: s.opts.Now().Add(s.opts.TokenLifetime)}
	s.refresh[refresh] = &refreshToken{did: did, jkt: jkt, scope: scope}
	return access, refresh
}

// ExpireAccessTokens makes every access token issued so far expired: the
// PDS answers 401 with error="invalid_token" and {"error":"ExpiredToken"}.
func (s *Server) ExpireAccessTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.access {
		t.expired = true
	}
}

// RevokeRefreshTokens makes every refresh token issued so far invalid (the
// user signed out elsewhere): refreshes answer invalid_grant.
func (s *Server) RevokeRefreshTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.refresh {
		t.used = true
	}
}

// RotateNonce replaces the DPoP nonce and returns the new one.
func (s *Server) RotateNonce() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rotateLocked()
	return s.nonce
}

func (s *Server) rotateLocked() {
	s.prev, s.nonce, s.nonceAt = s.nonce, randomToken(""), s.opts.Now()
}

// Nonce returns the current DPoP nonce.
func (s *Server) Nonce() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maybeRotateLocked()
	return s.nonce
}

func (s *Server) maybeRotateLocked() {
	if s.opts.NonceRotation > 0 && s.opts.Now().Sub(s.nonceAt) >= s.opts.NonceRotation {
		s.rotateLocked()
	}
}

// checkNonce reports whether nonce is acceptable now and returns the
// current nonce.
func (s *Server) checkNonce(nonce string) (bool, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maybeRotateLocked()
	ok := nonce != "" && (nonce == s.nonce || s.opts.AcceptPreviousNonce && nonce == s.prev)
	return ok, s.nonce
}

// Stats returns the counters.
func (s *Server) Stats() Stats {
	return Stats{
		Requests:         s.requests.Load(),
		NonceChallenges:  s.nonceChallenges.Load(),
		ProofRejections:  s.proofRejections.Load(),
		TokenRejections:  s.tokenRejections.Load(),
		TokenRequests:    s.tokenRequests.Load(),
		Refreshes:        s.refreshes.Load(),
		MetadataRequests: s.metadataRequests.Load(),
		Blobs:            s.blobs.Load(),
		BlobBytes:        s.blobBytes.Load(),
	}
}

// Calls returns how many requests reached the XRPC method nsid (whatever
// their outcome).
func (s *Server) Calls(nsid string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[nsid]
}

// FailNext makes the next authenticated call of nsid answer status with
// the XRPC error body {"error": errName, "message": message}.
func (s *Server) FailNext(nsid string, status int, errName, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failNext[nsid] = failure{status: status, errName: errName, message: message}
}

// SetHandle sets the handle getSession reports for did.
func (s *Server) SetHandle(did, handle string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handles[did] = handle
}

// writeXRPCError writes an XRPC error body.
func writeXRPCError(w http.ResponseWriter, status int, errName, message string) {
	writeJSON(w, status, map[string]string{"error": errName, "message": message})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// dpopChallenge writes a 401 with a DPoP WWW-Authenticate challenge.
func dpopChallenge(w http.ResponseWriter, oauthErr, description, xrpcErr string) {
	quoted := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(description)
	w.Header().Set("WWW-Authenticate",
		`DPoP algs="ES256", error="`+oauthErr+`", error_description="`+quoted+`"`)
	writeXRPCError(w, http.StatusUnauthorized, xrpcErr, description)
}

// authenticate checks a PDS request's DPoP authentication as a PDS does
// and returns the caller's DID. On failure it has written the response.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (string, bool) {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "DPoP") || token == "" {
		w.Header().Set("WWW-Authenticate", `DPoP algs="ES256"`)
		writeXRPCError(w, http.StatusUnauthorized, "AuthMissing", "Authentication Required")
		return "", false
	}
	proofs := r.Header.Values("DPoP")
	if len(proofs) != 1 {
		s.proofRejections.Add(1)
		dpopChallenge(w, "invalid_dpop_proof", "exactly one DPoP proof is required", "InvalidToken")
		return "", false
	}
	p, err := s.verifier.Verify(r.Context(), proofs[0], r.Method, s.URL+r.URL.EscapedPath(), token)
	if err != nil {
		s.proofRejections.Add(1)
		dpopChallenge(w, "invalid_dpop_proof", err.Error(), "InvalidToken")
		return "", false
	}
	ok, current := s.checkNonce(p.Nonce)
	w.Header().Set("DPoP-Nonce", current)
	if !ok {
		s.nonceChallenges.Add(1)
		dpopChallenge(w, "use_dpop_nonce", "Resource server requires nonce in DPoP proof", "use_dpop_nonce")
		return "", false
	}
	s.mu.Lock()
	t, found := s.access[token]
	var at accessToken
	if found {
		at = *t
	}
	s.mu.Unlock()
	switch {
	case !found:
		s.tokenRejections.Add(1)
		dpopChallenge(w, "invalid_token", "unknown access token", "InvalidToken")
		return "", false
	case at.jkt != p.JKT:
		s.tokenRejections.Add(1)
		dpopChallenge(w, "invalid_token", "access token is bound to another DPoP key", "InvalidToken")
		return "", false
	case at.expired || !s.opts.Now().Before(at.expires):
		s.tokenRejections.Add(1)
		dpopChallenge(w, "invalid_token", "token expired", "ExpiredToken")
		return "", false
	}
	return at.did, true
}

// randomToken returns prefix followed by 32 random bytes in base64url.
func randomToken(prefix string) string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return prefix + base64.RawURLEncoding.EncodeToString(b[:])
}
