package oauth

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/lexview/lexview/internal/netguard"
)

// Defaults of ClientOptions.
const (
	// DefaultMaxBufferedBody is the largest request body Client.Do keeps in
	// memory so that it can be re-sent after a nonce challenge or a token
	// refresh. Larger bodies (blob uploads) are streamed and sent once.
	DefaultMaxBufferedBody = 1 << 20
	// DefaultRefreshSkew is how long before its recorded expiry an access
	// token is refreshed proactively, before the request is sent.
	DefaultRefreshSkew = 30 * time.Second
	// DefaultMetadataTTL is how long authorization-server metadata is
	// cached per issuer.
	DefaultMetadataTTL = 10 * time.Minute
	// DefaultNonceFreshness is how long a remembered DPoP nonce is trusted
	// for a streamed request without a pre-flight (atproto servers accept
	// a nonce for about three minutes).
	DefaultNonceFreshness = time.Minute
	// DefaultRefreshTimeout bounds one refresh (metadata, token request and
	// saving), which runs detached from the requests waiting for it.
	DefaultRefreshTimeout = 30 * time.Second
)

// maxErrorPeek bounds how much of a 400 or 401 response body is read to
// classify it; the body is handed back to the caller unchanged.
const maxErrorPeek = 64 << 10

// maxWriteResponse bounds the body of a createRecord or putRecord response.
const maxWriteResponse = 1 << 20

// preflightPath is the cheap authenticated XRPC call that learns a PDS's
// DPoP nonce (and checks the access token) before a streamed request.
const preflightPath = "/xrpc/com.atproto.server.getSession"

// ErrSessionStale is returned by SessionSource.SaveTokens when the session
// moved past the version the refresh started from: another request or
// another Lexview instance refreshed it first. The Client then re-loads the
// session and uses the winner's tokens.
var ErrSessionStale = errors.New("oauth: session was refreshed concurrently")

// UserSession is a user's OAuth session on one device with its secrets in
// plaintext, as the Client needs it to act for the user.
type UserSession struct {
	ID       string
	DID      string
	PDSURL   string // the user's PDS, scheme and host (no trailing slash needed)
	Issuer   string // the authorization server's issuer URL
	ClientID string // the app's client_id URL, sent on refresh
	// AccessToken and RefreshToken are the DPoP-bound tokens.
	AccessToken  string
	RefreshToken string
	// ExpiresAt is the access token's expiry; zero when unknown.
	ExpiresAt time.Time
	Scopes    string // space-separated
	// DPoPKey is the device's DPoP private key (P-256).
	DPoPKey *ecdsa.PrivateKey
	// Version is the session's optimistic-concurrency version, passed back
	// to SaveTokens.
	Version int64
	// ClientAssertion, when set, makes a fresh client assertion for the
	// issuer: the app is a confidential client whose key Lexview holds.
	// It is called once per token request attempt (assertions are single
	// use).
	ClientAssertion func(ctx context.Context, issuer string) (string, error)
}

// Tokens is a token set obtained by a refresh.
type Tokens struct {
	AccessToken  string
	RefreshToken string
	ExpiresAt    time.Time // zero when the server gave no expires_in
	Scopes       string
}

// SessionSource loads sessions and stores refreshed tokens. The Client
// holds no session state of its own, so several Lexview instances can
// share one source.
type SessionSource interface {
	// Load returns the session id, opened.
	Load(ctx context.Context, id string) (*UserSession, error)
	// SaveTokens stores tokens refreshed from s if the session is still
	// at s.Version and returns the updated session (its Version moved on).
	// It returns an error wrapping ErrSessionStale when the version moved.
	SaveTokens(ctx context.Context, s *UserSession, tokens Tokens) (*UserSession, error)
}

// ClientOptions configure a Client. The zero value of each field means its
// default.
type ClientOptions struct {
	// HTTPClient sends every request; its Timeout applies. Redirects are
	// never followed (a DPoP proof is bound to one URL). Default: a
	// guarded client (no private or loopback addresses: PDS and
	// authorization-server URLs come from the network) with a 30-second
	// timeout.
	HTTPClient *http.Client
	// Now is the clock for proofs and token expiry; default time.Now.
	Now func() time.Time
	// MaxBufferedBody: see DefaultMaxBufferedBody.
	MaxBufferedBody int64
	// RefreshSkew: see DefaultRefreshSkew.
	RefreshSkew time.Duration
	// MetadataTTL: see DefaultMetadataTTL.
	MetadataTTL time.Duration
	// NonceFreshness: see DefaultNonceFreshness.
	NonceFreshness time.Duration
	// RefreshTimeout: see DefaultRefreshTimeout.
	RefreshTimeout time.Duration
	// UserAgent, when set, is sent on every request.
	UserAgent string
}

// Client sends requests to users' PDSes on their behalf with DPoP-bound
// tokens: it makes a fresh proof per request, answers DPoP nonce
// challenges, and refreshes expired tokens at the session's authorization
// server (single-flight per session). It is safe for concurrent use.
type Client struct {
	sessions SessionSource
	http     *http.Client
	now      func() time.Time
	opts     ClientOptions
	nonces   *nonceStore
	meta     *metadataCache

	flightMu sync.Mutex
	flights  map[string]*flight
}

// NewClient returns a Client working on the sessions of src.
func NewClient(src SessionSource, opts ClientOptions) *Client {
	hc := netguard.NewClient(netguard.Options{}, 30*time.Second)
	if opts.HTTPClient != nil {
		c := *opts.HTTPClient
		hc = &c
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxBufferedBody <= 0 {
		opts.MaxBufferedBody = DefaultMaxBufferedBody
	}
	if opts.RefreshSkew <= 0 {
		opts.RefreshSkew = DefaultRefreshSkew
	}
	if opts.MetadataTTL <= 0 {
		opts.MetadataTTL = DefaultMetadataTTL
	}
	if opts.NonceFreshness <= 0 {
		opts.NonceFreshness = DefaultNonceFreshness
	}
	if opts.RefreshTimeout <= 0 {
		opts.RefreshTimeout = DefaultRefreshTimeout
	}
	return &Client{
		sessions: src,
		http:     hc,
		now:      opts.Now,
		opts:     opts,
		nonces:   newNonceStore(),
		meta:     newMetadataCache(),
		flights:  make(map[string]*flight),
	}
}

// outbound is one request to a PDS, before authentication.
type outbound struct {
	method, path string
	query        url.Values
	contentType  string
	// Exactly one of buffered (a re-sendable body, possibly nil for no
	// body) and stream (sent once) is used.
	buffered []byte
	stream   io.Reader
	length   int64 // of stream; -1 when unknown
}

// Do sends method path?query to the session's PDS with the session's
// tokens and returns the PDS's response with its body unread; the caller
// closes it. contentLength is the body's length, or -1 when unknown.
//
// A body of known length up to MaxBufferedBody (or of unknown length that
// turns out no longer) is buffered and re-sent when the PDS demands a new
// DPoP nonce or rejects an expired token (at most one retry of each kind).
// A longer body is streamed and sent exactly once: before it, the token is
// refreshed if it is within RefreshSkew of expiry, and when no nonce for
// the PDS was learned within NonceFreshness, a pre-flight GET of
// com.atproto.server.getSession learns it (and checks the token); if the
// PDS still refuses the streamed request, its response is returned
// unchanged.
//
// Do returns an error only when no PDS response can be returned: the
// session cannot be loaded, a refresh failed (a *RefreshError when the
// authorization server refused it), or the transport failed.
func (c *Client) Do(ctx context.Context, sessionID, method, path string, query url.Values, body io.Reader, contentType string, contentLength int64) (*http.Response, error) {
	sess, err := c.sessions.Load(ctx, sessionID)
	if err != nil {
		return nil, fmt.Errorf("oauth: load session: %w", err)
	}
	out := outbound{method: method, path: path, query: query, contentType: contentType, length: -1}
	switch {
	case body == nil:
	case contentLength >= 0 && contentLength <= c.opts.MaxBufferedBody:
		b, err := io.ReadAll(io.LimitReader(body, contentLength+1))
		if err != nil {
			return nil, fmt.Errorf("oauth: read request body: %w", err)
		}
		if int64(len(b)) != contentLength {
			return nil, fmt.Errorf("oauth: request body is %d bytes, declared %d", len(b), contentLength)
		}
		out.buffered = b
	case contentLength < 0:
		// Unknown length: buffer it if it is small, else stream what was
		// read followed by the rest.
		b, err := io.ReadAll(io.LimitReader(body, c.opts.MaxBufferedBody+1))
		if err != nil {
			return nil, fmt.Errorf("oauth: read request body: %w", err)
		}
		if int64(len(b)) <= c.opts.MaxBufferedBody {
			out.buffered = b
		} else {
			out.stream = io.MultiReader(bytes.NewReader(b), body)
		}
	default:
		out.stream, out.length = body, contentLength
	}
	return c.send(ctx, sess, out)
}

// send authenticates and sends out for sess, with the retries Do
// describes.
func (c *Client) send(ctx context.Context, sess *UserSession, out outbound) (*http.Response, error) {
	if !strings.HasPrefix(out.path, "/") {
		return nil, fmt.Errorf("oauth: request path %q does not start with /", out.path)
	}
	sess, err := c.refreshIfExpiring(ctx, sess)
	if err != nil {
		return nil, err
	}
	if out.stream == nil {
		resp, _, err := c.exchange(ctx, sess, out)
		return resp, err
	}
	// A streamed body is sent once: first make sure the nonce is known and
	// the token accepted, with a bodiless request that may be retried.
	target := strings.TrimSuffix(sess.PDSURL, "/") + out.path
	origin, err := originOf(target)
	if err != nil {
		return nil, err
	}
	if _, fresh := c.nonces.get(origin, c.now(), c.opts.NonceFreshness); !fresh {
		resp, s, err := c.exchange(ctx, sess, outbound{method: http.MethodGet, path: preflightPath, length: -1})
		if err != nil {
			return nil, err
		}
		discard(resp) // whatever the outcome, the streamed request decides
		sess = s
	}
	return c.attempt(ctx, sess, out, target, origin)
}

// exchange sends a re-sendable request, retrying once with a new nonce when
// the server demands one and once after a refresh when it rejects the
// token. It returns the last response and the session it was sent with.
func (c *Client) exchange(ctx context.Context, sess *UserSession, out outbound) (*http.Response, *UserSession, error) {
	target := strings.TrimSuffix(sess.PDSURL, "/") + out.path
	origin, err := originOf(target)
	if err != nil {
		return nil, nil, err
	}
	nonceRetried, refreshed := false, false
	for {
		resp, err := c.attempt(ctx, sess, out, target, origin)
		if err != nil {
			return nil, nil, err
		}
		switch kind := classify(resp); {
		case kind == challengeNonce && !nonceRetried && resp.Header.Get("DPoP-Nonce") != "":
			nonceRetried = true
			discard(resp)
		case kind == challengeToken && !refreshed:
			refreshed = true
			discard(resp)
			if sess, err = c.refresh(ctx, sess); err != nil {
				return nil, nil, err
			}
		default:
			return resp, sess, nil
		}
	}
}

// attempt sends one authenticated request and remembers the nonce the
// response carries.
func (c *Client) attempt(ctx context.Context, sess *UserSession, out outbound, target, origin string) (*http.Response, error) {
	signer, err := NewSigner(sess.DPoPKey, c.now)
	if err != nil {
		return nil, err
	}
	nonce, _ := c.nonces.get(origin, c.now(), 0)
	proof, err := signer.NewProof(out.method, target, sess.AccessToken, nonce)
	if err != nil {
		return nil, err
	}
	full := target
	if len(out.query) > 0 {
		full += "?" + out.query.Encode()
	}
	var body io.Reader
	switch {
	case out.stream != nil:
		body = out.stream
	case out.buffered != nil:
		body = bytes.NewReader(out.buffered)
	}
	req, err := http.NewRequestWithContext(ctx, out.method, full, body)
	if err != nil {
		return nil, fmt.Errorf("oauth: build PDS request: %w", err)
	}
	if out.stream != nil {
		req.ContentLength = out.length
	}
	req.Header.Set("Authorization", "DPoP "+sess.AccessToken)
	req.Header.Set("DPoP", proof)
	if out.contentType != "" && body != nil {
		req.Header.Set("Content-Type", out.contentType)
	}
	c.userAgent(req)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("oauth: PDS request %s %s: %w", out.method, out.path, err)
	}
	c.nonces.put(origin, resp.Header.Get("DPoP-Nonce"), c.now())
	return resp, nil
}

// WriteResult is what createRecord and putRecord report.
type WriteResult struct {
	URI       string
	CID       string
	CommitCID string // "" when the PDS gave no commit
	Rev       string // "" when the PDS gave no commit
}

// NoCommit reports whether the PDS answered without a commit. For
// putRecord that means the record was unchanged and nothing was written:
// the reference PDS skips such a put, and no event of it reaches the
// network.
func (r *WriteResult) NoCommit() bool { return r.CommitCID == "" && r.Rev == "" }

// CreateRecord calls com.atproto.repo.createRecord on the session's PDS for
// the session's repository, with rkey when not "". It returns the PDS's
// status and body unchanged, and the parsed result when the status is 200.
func (c *Client) CreateRecord(ctx context.Context, sessionID, collection string, record json.RawMessage, rkey string) (int, []byte, *WriteResult, error) {
	sess, err := c.sessions.Load(ctx, sessionID)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("oauth: load session: %w", err)
	}
	in := struct {
		Repo       string          `json:"repo"`
		Collection string          `json:"collection"`
		Rkey       string          `json:"rkey,omitempty"`
		Record     json.RawMessage `json:"record"`
	}{sess.DID, collection, rkey, record}
	return c.write(ctx, sess, "/xrpc/com.atproto.repo.createRecord", in)
}

// PutRecord calls com.atproto.repo.putRecord on the session's PDS, with
// swapRecord (the CID the record must currently have) when not "". It
// returns the PDS's status and body unchanged, and the parsed result when
// the status is 200.
func (c *Client) PutRecord(ctx context.Context, sessionID, repo, collection, rkey string, record json.RawMessage, swapRecord string) (int, []byte, *WriteResult, error) {
	sess, err := c.sessions.Load(ctx, sessionID)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("oauth: load session: %w", err)
	}
	in := struct {
		Repo       string          `json:"repo"`
		Collection string          `json:"collection"`
		Rkey       string          `json:"rkey"`
		Record     json.RawMessage `json:"record"`
		SwapRecord string          `json:"swapRecord,omitempty"`
	}{repo, collection, rkey, record, swapRecord}
	return c.write(ctx, sess, "/xrpc/com.atproto.repo.putRecord", in)
}

// DeleteRecord calls com.atproto.repo.deleteRecord on the session's PDS
// for the session's repository. It returns the PDS's status and body
// unchanged, and the revision of the commit (when the PDS gave one).
func (c *Client) DeleteRecord(ctx context.Context, sessionID, collection, rkey string) (int, []byte, string, error) {
	sess, err := c.sessions.Load(ctx, sessionID)
	if err != nil {
		return 0, nil, "", fmt.Errorf("oauth: load session: %w", err)
	}
	in := struct {
		Repo       string `json:"repo"`
		Collection string `json:"collection"`
		Rkey       string `json:"rkey"`
	}{sess.DID, collection, rkey}
	status, body, err := c.post(ctx, sess, "/xrpc/com.atproto.repo.deleteRecord", in)
	if err != nil || status != http.StatusOK {
		return status, body, "", err
	}
	var out struct {
		Commit *struct {
			Rev string `json:"rev"`
		} `json:"commit"`
	}
	rev := ""
	if json.Unmarshal(body, &out) == nil && out.Commit != nil {
		rev = out.Commit.Rev
	}
	return status, body, rev, nil
}

func (c *Client) write(ctx context.Context, sess *UserSession, path string, in any) (int, []byte, *WriteResult, error) {
	status, body, err := c.post(ctx, sess, path, in)
	if err != nil || status != http.StatusOK {
		return status, body, nil, err
	}
	var out struct {
		URI    string `json:"uri"`
		CID    string `json:"cid"`
		Commit *struct {
			CID string `json:"cid"`
			Rev string `json:"rev"`
		} `json:"commit"`
	}
	if err := json.Unmarshal(body, &out); err != nil || out.URI == "" || out.CID == "" {
		return status, body, nil, fmt.Errorf("oauth: PDS write response lacks uri and cid")
	}
	res := &WriteResult{URI: out.URI, CID: out.CID}
	if out.Commit != nil {
		res.CommitCID, res.Rev = out.Commit.CID, out.Commit.Rev
	}
	return status, body, res, nil
}

// post sends a JSON procedure call through the session and returns the
// status and (bounded) body.
func (c *Client) post(ctx context.Context, sess *UserSession, path string, in any) (int, []byte, error) {
	payload, err := json.Marshal(in)
	if err != nil {
		return 0, nil, fmt.Errorf("oauth: encode %s input: %w", path, err)
	}
	resp, err := c.send(ctx, sess, outbound{
		method: http.MethodPost, path: path, contentType: "application/json", buffered: payload, length: -1,
	})
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxWriteResponse+1))
	if err != nil {
		return 0, nil, fmt.Errorf("oauth: read PDS response: %w", err)
	}
	if len(body) > maxWriteResponse {
		return 0, nil, fmt.Errorf("oauth: PDS response exceeds %d bytes", maxWriteResponse)
	}
	return resp.StatusCode, body, nil
}

// discard drains a little of a response that will not be returned, so its
// connection can be reused, and closes it.
func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorPeek))
	resp.Body.Close()
}

// originOf returns scheme://host of an absolute http(s) URL.
func originOf(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", fmt.Errorf("oauth: %q is not an absolute http(s) URL", raw)
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}

// maxNonceOrigins bounds the nonce store; past it an arbitrary entry is
// forgotten (it will be learned again through a challenge).
const maxNonceOrigins = 10000

// nonceStore remembers the latest DPoP nonce of each server origin.
type nonceStore struct {
	mu sync.RWMutex
	m  map[string]nonceEntry
}

type nonceEntry struct {
	nonce string
	at    time.Time
}

func newNonceStore() *nonceStore { return &nonceStore{m: make(map[string]nonceEntry)} }

// get returns origin's nonce and whether it was learned within freshness
// of now (any age counts when freshness is 0).
func (n *nonceStore) get(origin string, now time.Time, freshness time.Duration) (string, bool) {
	n.mu.RLock()
	e, ok := n.m[origin]
	n.mu.RUnlock()
	if !ok {
		return "", false
	}
	return e.nonce, freshness == 0 || now.Sub(e.at) < freshness
}

// put remembers a nonce for origin; an empty nonce changes nothing.
func (n *nonceStore) put(origin, nonce string, now time.Time) {
	if nonce == "" {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.m[origin]; !ok && len(n.m) >= maxNonceOrigins {
		for k := range n.m {
			delete(n.m, k)
			break
		}
	}
	n.m[origin] = nonceEntry{nonce: nonce, at: now}
}
