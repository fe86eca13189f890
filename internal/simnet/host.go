package simnet

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bluesky-social/indigo/atproto/atdata"
	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"
)

// host is one PDS host being served.
type host struct {
	Host
	url   string
	srv   *http.Server
	ln    net.Listener
	mu    sync.Mutex
	start time.Time // of the current rate-limit window
	used  int       // requests in the current window
}

func (n *Network) startHost(h Host) (*host, error) {
	hs := &host{Host: h}
	var err error
	if h.Fault == Down {
		hs.ln, err = refusingListener(n)
	} else {
		hs.ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		return nil, err
	}
	hs.url = "http://" + hs.ln.Addr().String()
	if h.Fault != Down {
		hs.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.serveHost(hs, w, r) }), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = hs.srv.Serve(hs.ln) }()
	}
	return hs, nil
}

func (h *host) close() {
	if h.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = h.srv.Shutdown(ctx)
		_ = h.srv.Close()
	}
	_ = h.ln.Close()
}

// admit counts a request against the host's rate limit and writes its
// RateLimit-* headers. It reports false, having answered 429, when the
// window is used up.
func (n *Network) admit(h *host, w http.ResponseWriter) bool {
	if h.RateLimit <= 0 {
		return true
	}
	window := n.Plan.Spec.RateWindow
	h.mu.Lock()
	now := time.Now()
	if now.Sub(h.start) >= window {
		h.start, h.used = now, 0
	}
	reset := h.start.Add(window)
	ok := h.used < h.RateLimit
	if ok {
		h.used++
	}
	remaining := h.RateLimit - h.used
	h.mu.Unlock()
	hd := w.Header()
	hd.Set("RateLimit-Limit", strconv.Itoa(h.RateLimit))
	hd.Set("RateLimit-Remaining", strconv.Itoa(remaining))
	hd.Set("RateLimit-Reset", strconv.FormatInt(int64(math.Ceil(float64(reset.UnixMilli())/1000)), 10))
	hd.Set("RateLimit-Policy", strconv.Itoa(h.RateLimit)+";w="+strconv.Itoa(int(math.Ceil(window.Seconds()))))
	if !ok {
		hd.Set("Retry-After", strconv.Itoa(int(math.Ceil(time.Until(reset).Seconds()))))
		n.stats.rateLimited.Add(1)
		xrpcError(w, http.StatusTooManyRequests, "RateLimitExceeded", "Rate Limit Exceeded")
	}
	return ok
}

// fault is what a flaky host does with one answer.
type fault int

const (
	noFault fault = iota
	failAnswer
	cutAnswer
	stallAnswer
)

// faultFor decides the fault of the next request of method for did on a
// flaky host: the k-th such request meets the same fault in every run.
func (n *Network) faultFor(h *host, did, method string) fault {
	if h.Fault != Flaky {
		return noFault
	}
	key := did + " " + method
	v, _ := n.tries.LoadOrStore(key, new(atomic.Int64))
	k := v.(*atomic.Int64).Add(1)
	f := fnv.New64a()
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], n.Plan.Spec.Seed)
	binary.BigEndian.PutUint64(b[8:], uint64(k))
	f.Write(b[:])
	f.Write([]byte(key))
	x := f.Sum64()
	if float64(x>>11)/(1<<53) >= n.Plan.Spec.FlakyFailure {
		return noFault
	}
	return fault(1 + x%3)
}

func (n *Network) serveHost(h *host, w http.ResponseWriter, r *http.Request) {
	n.stats.requests.Add(1)
	sleep(r.Context(), jittered(h.RTT, n.Plan.Spec.Jitter))
	if !n.admit(h, w) {
		return
	}
	q := r.URL.Query()
	method := strings.TrimPrefix(r.URL.Path, "/xrpc/")
	if method == "com.atproto.sync.listRepos" {
		n.listRepos(w, r, n.byHost[h.Index])
		return
	}
	did := q.Get("did")
	if method == "com.atproto.repo.listRecords" {
		did = q.Get("repo")
	}
	switch method {
	case "com.atproto.sync.getRepo", "com.atproto.repo.listRecords", "com.atproto.sync.getLatestCommit":
	default:
		xrpcError(w, http.StatusNotImplemented, "MethodNotImplemented", "Method Not Implemented")
		return
	}
	a, ok := n.Account(did)
	switch {
	case !ok || a.Host != h.Index && a.Former != h.Index:
		xrpcError(w, http.StatusBadRequest, "RepoNotFound", "Could not find repo for DID: "+did)
		return
	case a.Former == h.Index || a.Status == Deactivated:
		xrpcError(w, http.StatusBadRequest, "RepoDeactivated", "Repo has been deactivated: "+did)
		return
	case a.Status == TakenDown:
		xrpcError(w, http.StatusBadRequest, "RepoTakendown", "Repo has been takendown: "+did)
		return
	case a.Status == Deleted:
		xrpcError(w, http.StatusBadRequest, "RepoNotFound", "Could not find repo for DID: "+did)
		return
	}
	f := n.faultFor(h, did, method)
	switch f {
	case failAnswer:
		n.stats.failed.Add(1)
		xrpcError(w, []int{http.StatusBadGateway, http.StatusServiceUnavailable}[len(did)%2], "InternalServerError", "upstream failure")
		return
	case stallAnswer:
		n.stats.stalled.Add(1)
		sleep(r.Context(), n.Plan.Spec.StallTime)
		panic(http.ErrAbortHandler)
	}
	var body []byte
	var ctype string
	switch method {
	case "com.atproto.sync.getRepo":
		car, err := n.export(r.Context(), h, a)
		if err != nil {
			xrpcError(w, http.StatusInternalServerError, "InternalServerError", err.Error())
			return
		}
		body, ctype = car, "application/vnd.ipld.car"
	case "com.atproto.repo.listRecords":
		body, ctype = n.listRecords(a, q.Get("collection"), q.Get("cursor"), q.Get("limit")), "application/json"
	case "com.atproto.sync.getLatestCommit":
		body, _ = json.Marshal(map[string]string{"cid": headCID, "rev": a.Rev})
		ctype = "application/json"
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	if f == cutAnswer {
		n.stats.cut.Add(1)
		n.send(r.Context(), h, w, body[:len(body)/2])
		panic(http.ErrAbortHandler) // drops the connection mid-body
	}
	n.send(r.Context(), h, w, body)
}

// send writes body at the host's bandwidth, in slices of about 20 ms.
func (n *Network) send(ctx context.Context, h *host, w http.ResponseWriter, body []byte) {
	chunk := max(h.Bandwidth/50, 4096)
	rc := http.NewResponseController(w)
	for len(body) > 0 && ctx.Err() == nil {
		k := min(chunk, len(body))
		if _, err := w.Write(body[:k]); err != nil {
			return
		}
		n.stats.bytes.Add(int64(k))
		body = body[k:]
		if len(body) > 0 {
			_ = rc.Flush()
			sleep(ctx, time.Duration(float64(k)/float64(h.Bandwidth)*float64(time.Second)))
		}
	}
}

// export is account a's getRepo answer. Exports of flaky hosts are kept,
// since they are fetched again; others are built for each request.
func (n *Network) export(ctx context.Context, h *host, a Account) ([]byte, error) {
	if v, ok := n.cached.Load(a.Index); ok {
		return v.([]byte), nil
	}
	car, err := n.Plan.Export(ctx, a)
	if err == nil && h.Fault == Flaky {
		n.cached.Store(a.Index, car)
	}
	return car, err
}

// listRecords renders a page of com.atproto.repo.listRecords.
func (n *Network) listRecords(a Account, collection, cursor, limitParam string) []byte {
	count := 0
	switch collection {
	case n.Plan.Spec.Collection:
		count = a.Records
	case n.Plan.Spec.Other:
		count = a.Other
	}
	limit := 50
	if v, err := strconv.Atoi(limitParam); err == nil && v >= 1 && v <= 100 {
		limit = v
	}
	start := 0
	if cursor != "" {
		start = sort.Search(count, func(i int) bool { return RKey(a, i) > cursor })
	}
	type item struct {
		URI   string         `json:"uri"`
		CID   string         `json:"cid"`
		Value map[string]any `json:"value"`
	}
	page := []item{}
	for i := start; i < count && len(page) < limit; i++ {
		v := Record(a, collection, i)
		page = append(page, item{URI: "at://" + a.DID + "/" + collection + "/" + RKey(a, i), CID: recordCID(v), Value: v})
	}
	out := map[string]any{"records": page}
	if start+len(page) < count && len(page) > 0 {
		last := page[len(page)-1].URI
		out["cursor"] = last[strings.LastIndexByte(last, '/')+1:]
	}
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(out)
	return buf.Bytes()
}

// recordCID is the CID of a record's DAG-CBOR encoding.
func recordCID(v map[string]any) string {
	data, err := atdata.MarshalCBOR(v)
	if err != nil {
		return headCID
	}
	c, err := cid.V1Builder{Codec: cid.DagCBOR, MhType: multihash.SHA2_256}.Sum(data)
	if err != nil {
		return headCID
	}
	return c.String()
}

// jittered is d varied uniformly by ±jitter of itself.
func jittered(d time.Duration, jitter float64) time.Duration {
	if d <= 0 || jitter <= 0 {
		return d
	}
	return time.Duration(float64(d) * (1 + jitter*(2*rand.Float64()-1)))
}
