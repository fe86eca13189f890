package simnet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"
)

// Network is a plan served on 127.0.0.1: a listener per PDS host, a PLC
// directory and a relay. Its methods are safe for concurrent use.
type Network struct {
	Plan *Plan

	hosts  []*host
	plc    *httptest.Server
	relay  *httptest.Server
	byDID  map[string]int // account index by DID
	sorted []int          // account indexes in DID order
	byHost map[int][]int  // account indexes served by a host, in DID order
	tries  sync.Map       // "did method" -> *atomic.Int64: requests seen
	cached sync.Map       // account index -> []byte: exports of flaky hosts
	stats  counters
}

// Start serves plan. Stop it with Close.
func Start(plan *Plan) (*Network, error) {
	n := &Network{Plan: plan, byDID: map[string]int{}, byHost: map[int][]int{}}
	for i, a := range plan.Accounts {
		n.byDID[a.DID] = i
		n.sorted = append(n.sorted, i)
	}
	slices.SortFunc(n.sorted, func(a, b int) int { return strings.Compare(plan.Accounts[a].DID, plan.Accounts[b].DID) })
	for _, i := range n.sorted {
		a := plan.Accounts[i]
		n.byHost[a.Host] = append(n.byHost[a.Host], i)
		if a.Former >= 0 {
			n.byHost[a.Former] = append(n.byHost[a.Former], i)
		}
	}
	for _, h := range plan.Hosts {
		hs, err := n.startHost(h)
		if err != nil {
			n.Close()
			return nil, err
		}
		n.hosts = append(n.hosts, hs)
	}
	n.plc = httptest.NewServer(http.HandlerFunc(n.servePLC))
	n.relay = httptest.NewServer(http.HandlerFunc(n.serveRelay))
	return n, nil
}

// Close stops every listener.
func (n *Network) Close() {
	for _, h := range n.hosts {
		h.close()
	}
	if n.plc != nil {
		n.plc.Close()
	}
	if n.relay != nil {
		n.relay.Close()
	}
}

// RelayURL is the relay's base URL (a RELAY_URL).
func (n *Network) RelayURL() string { return n.relay.URL }

// PLCURL is the PLC directory's base URL (a PLC_URL).
func (n *Network) PLCURL() string { return n.plc.URL }

// HostURL is the base URL of host i.
func (n *Network) HostURL(i int) string { return n.hosts[i].url }

// Directory resolves DIDs through the network's PLC directory.
func (n *Network) Directory() identity.Directory {
	return &identity.BaseDirectory{PLCURL: n.plc.URL, SkipHandleVerification: true, HTTPClient: http.Client{Timeout: 10 * time.Second}}
}

// Account returns the account of did.
func (n *Network) Account(did string) (Account, bool) {
	i, ok := n.byDID[did]
	if !ok {
		return Account{}, false
	}
	return n.Plan.Accounts[i], true
}

// Stats counts what the network answered.
type Stats struct {
	Requests    int64 // answers begun by PDS hosts (not counting refused connections)
	RateLimited int64 // 429 answers
	Failed      int64 // injected 5xx answers
	Cut         int64 // downloads cut short
	Stalled     int64 // answers that stalled and were dropped
	Refused     int64 // connections a down host refused
	Bytes       int64 // body bytes sent by PDS hosts
	Resolutions int64 // DID documents served by the PLC directory
}

type counters struct {
	requests, rateLimited, failed, cut, stalled, refused, bytes, resolutions atomic.Int64
}

// Stats returns the counts so far.
func (n *Network) Stats() Stats {
	c := &n.stats
	return Stats{
		Requests: c.requests.Load(), RateLimited: c.rateLimited.Load(), Failed: c.failed.Load(), Cut: c.cut.Load(),
		Stalled: c.stalled.Load(), Refused: c.refused.Load(), Bytes: c.bytes.Load(), Resolutions: c.resolutions.Load(),
	}
}

// servePLC answers GET /{did} with the account's DID document, naming
// the host that serves it now and its signing key.
func (n *Network) servePLC(w http.ResponseWriter, r *http.Request) {
	sleep(r.Context(), jittered(n.Plan.Spec.PLCRTT, n.Plan.Spec.Jitter))
	a, ok := n.Account(strings.TrimPrefix(r.URL.Path, "/"))
	if !ok {
		xrpcError(w, http.StatusNotFound, "NotFound", "DID not registered")
		return
	}
	key, err := n.Plan.SigningKey(a)
	if err != nil {
		xrpcError(w, http.StatusInternalServerError, "InternalServerError", err.Error())
		return
	}
	pub, err := key.PublicKey()
	if err != nil {
		xrpcError(w, http.StatusInternalServerError, "InternalServerError", err.Error())
		return
	}
	n.stats.resolutions.Add(1)
	writeJSON(w, identity.DIDDocument{
		DID: syntax.DID(a.DID),
		VerificationMethod: []identity.DocVerificationMethod{{
			ID: a.DID + "#atproto", Type: "Multikey", Controller: a.DID, PublicKeyMultibase: pub.Multibase(),
		}},
		Service: []identity.DocService{{ID: "#atproto_pds", Type: "AtprotoPersonalDataServer", ServiceEndpoint: n.hosts[a.Host].url}},
	})
}

// serveRelay answers com.atproto.sync.listRepos (every account, with its
// status) and com.atproto.sync.listReposByCollection.
func (n *Network) serveRelay(w http.ResponseWriter, r *http.Request) {
	sleep(r.Context(), jittered(n.Plan.Spec.RelayRTT, n.Plan.Spec.Jitter))
	q := r.URL.Query()
	switch strings.TrimPrefix(r.URL.Path, "/xrpc/") {
	case "com.atproto.sync.listRepos":
		n.listRepos(w, r, n.sorted)
	case "com.atproto.sync.listReposByCollection":
		collection := q.Get("collection")
		var dids []string
		for _, i := range n.sorted {
			a := n.Plan.Accounts[i]
			if collection == n.Plan.Spec.Collection && a.Records > 0 || collection == n.Plan.Spec.Other && a.Other > 0 {
				dids = append(dids, a.DID)
			}
		}
		page, next := pageOf(dids, q.Get("cursor"), q.Get("limit"), 2000)
		repos := make([]map[string]string, 0, len(page))
		for _, did := range page {
			repos = append(repos, map[string]string{"did": did})
		}
		writeJSON(w, withCursor(map[string]any{"repos": repos}, next))
	default:
		xrpcError(w, http.StatusNotImplemented, "MethodNotImplemented", "Method Not Implemented")
	}
}

// listRepos answers com.atproto.sync.listRepos over the accounts idx (in
// DID order), as a relay or a PDS lists them.
func (n *Network) listRepos(w http.ResponseWriter, r *http.Request, idx []int) {
	dids := make([]string, len(idx))
	for k, i := range idx {
		dids[k] = n.Plan.Accounts[i].DID
	}
	page, next := pageOf(dids, r.URL.Query().Get("cursor"), r.URL.Query().Get("limit"), 1000)
	type repo struct {
		DID    string `json:"did"`
		Head   string `json:"head"`
		Rev    string `json:"rev"`
		Active bool   `json:"active"`
		Status string `json:"status,omitempty"`
	}
	out := make([]repo, 0, len(page))
	for _, did := range page {
		a, _ := n.Account(did)
		out = append(out, repo{DID: did, Head: headCID, Rev: a.Rev, Active: a.Status == Active, Status: a.Status})
	}
	writeJSON(w, withCursor(map[string]any{"repos": out}, next))
}

// headCID stands for every commit CID the network names outside exports.
const headCID = "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm"

func withCursor(body map[string]any, next string) map[string]any {
	if next != "" {
		body["cursor"] = next
	}
	return body
}

// pageOf pages sorted keys after cursor, at most limit (1 to hi; 500 when
// absent or out of range) of them.
func pageOf(keys []string, cursor, limitParam string, hi int) ([]string, string) {
	limit := 500
	if v, err := parseInt(limitParam); err == nil && v >= 1 && v <= hi {
		limit = v
	}
	start, _ := slices.BinarySearch(keys, cursor)
	if start < len(keys) && cursor != "" && keys[start] == cursor {
		start++
	}
	end := min(start+limit, len(keys))
	page := keys[start:end]
	if end < len(keys) && len(page) > 0 {
		return page, page[len(page)-1]
	}
	return page, ""
}

func parseInt(s string) (int, error) {
	var v int
	_, err := fmt.Sscanf(s, "%d", &v)
	return v, err
}

func xrpcError(w http.ResponseWriter, status int, name, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": name, "message": msg})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// refusingListener accepts connections and closes them at once, as a
// host that is down (or a port with nothing behind it) does.
func refusingListener(n *Network) (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("simnet: listen: %w", err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			n.stats.refused.Add(1)
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // a reset, not an orderly close
			}
			_ = c.Close()
		}
	}()
	return ln, nil
}
