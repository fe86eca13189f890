package simnet

import (
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"testing"
	"time"
)

func TestDrawIsDeterministic(t *testing.T) {
	a, b := Draw(Small(7)), Draw(Small(7))
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed drew two networks")
	}
	if c := Draw(Small(8)); reflect.DeepEqual(a.Accounts, c.Accounts) {
		t.Fatal("two seeds drew the same accounts")
	}
	for seed := range uint64(200) {
		p := Draw(Small(seed))
		kinds := map[string]bool{}
		for _, h := range p.Hosts {
			kinds[h.Fault.String()] = true
			if h.RateLimit > 0 && h.Fault == Healthy {
				kinds["rate-limited"] = true
			}
		}
		for _, acc := range p.Accounts {
			kinds["status "+acc.Status] = true
			if acc.Former >= 0 {
				kinds["migrated"] = true
			}
			if acc.Records < 1 || acc.Records > p.Spec.MaxRecords {
				t.Errorf("%s holds %d records", acc.DID, acc.Records)
			}
		}
		for _, k := range []string{"healthy", "down", "flaky", "rate-limited", "status ", "status deactivated", "status takendown", "status deleted", "migrated"} {
			if !kinds[k] {
				t.Errorf("the small network has no %q: %s", k, p.Summary())
			}
		}
	}
}

func start(t *testing.T, spec Spec) *Network {
	t.Helper()
	n, err := Start(Draw(spec))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	return n
}

func get(t *testing.T, url string) (*http.Response, []byte, error) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	return res, body, err
}

// find returns the first account the predicate accepts.
func find(t *testing.T, n *Network, ok func(Account, Host) bool) Account {
	t.Helper()
	for _, a := range n.Plan.Accounts {
		if ok(a, n.Plan.Hosts[a.Host]) {
			return a
		}
	}
	t.Fatal("no such account in the plan")
	return Account{}
}

func TestAccountStatesAnswerAsAPDS(t *testing.T) {
	spec := Small(3)
	spec.FlakyFailure = 0
	spec.RateLimited = 0
	n := start(t, spec)
	healthy := func(h Host) bool { return h.Fault == Healthy }
	for _, tc := range []struct {
		name   string
		pick   func(Account, Host) bool
		host   func(Account) int
		status int
		err    string
	}{
		{"active", func(a Account, h Host) bool { return a.Status == Active && healthy(h) }, nil, 200, ""},
		{"deactivated", func(a Account, h Host) bool { return a.Status == Deactivated && healthy(h) }, nil, 400, "RepoDeactivated"},
		{"taken down", func(a Account, h Host) bool { return a.Status == TakenDown && healthy(h) }, nil, 400, "RepoTakendown"},
		{"deleted", func(a Account, h Host) bool { return a.Status == Deleted && healthy(h) }, nil, 400, "RepoNotFound"},
		{"migrated, at the old host", func(a Account, h Host) bool {
			return a.Former >= 0 && a.Status == Active && n.Plan.Hosts[a.Former].Fault == Healthy
		}, func(a Account) int { return a.Former }, 400, "RepoDeactivated"},
	} {
		a := find(t, n, tc.pick)
		at := a.Host
		if tc.host != nil {
			at = tc.host(a)
		}
		res, body, err := get(t, n.HostURL(at)+"/xrpc/com.atproto.sync.getRepo?did="+a.DID)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var e struct{ Error string }
		_ = json.Unmarshal(body, &e)
		if res.StatusCode != tc.status || e.Error != tc.err {
			t.Errorf("%s: %d %q, want %d %q", tc.name, res.StatusCode, e.Error, tc.status, tc.err)
		}
		if tc.status == 200 && res.Header.Get("Content-Type") != "application/vnd.ipld.car" {
			t.Errorf("%s: content type %q", tc.name, res.Header.Get("Content-Type"))
		}
	}
	down := find(t, n, func(a Account, h Host) bool { return h.Fault == Down })
	if _, _, err := get(t, n.HostURL(down.Host)+"/xrpc/com.atproto.sync.getRepo?did="+down.DID); err == nil {
		t.Error("a down host answered")
	}
}

func TestRateLimitedHostAnswers429WithHeaders(t *testing.T) {
	spec := Small(3)
	spec.FlakyFailure = 0
	spec.RateWindow = time.Minute
	n := start(t, spec)
	a := find(t, n, func(a Account, h Host) bool { return h.RateLimit > 0 && h.Fault == Healthy && a.Status == Active })
	url := n.HostURL(a.Host) + "/xrpc/com.atproto.sync.getLatestCommit?did=" + a.DID
	for i := range spec.RateLimit {
		res, _, err := get(t, url)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("request %d: %v %v", i, res, err)
		}
		if got := res.Header.Get("RateLimit-Remaining"); got != strconv.Itoa(spec.RateLimit-i-1) {
			t.Fatalf("request %d: RateLimit-Remaining %q", i, got)
		}
	}
	res, _, err := get(t, url)
	if err != nil || res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("over the limit: %v %v", res, err)
	}
	reset, _ := strconv.ParseInt(res.Header.Get("RateLimit-Reset"), 10, 64)
	if res.Header.Get("Retry-After") == "" || reset < time.Now().Unix() || res.Header.Get("RateLimit-Limit") != strconv.Itoa(spec.RateLimit) {
		t.Errorf("429 headers: %v", res.Header)
	}
	if n.Stats().RateLimited != 1 {
		t.Errorf("stats: %+v", n.Stats())
	}
}

func TestFlakyFaultsRepeatWithTheSeed(t *testing.T) {
	outcomes := func() []int {
		spec := Small(5)
		spec.StallTime = 10 * time.Millisecond
		n := start(t, spec)
		a := find(t, n, func(a Account, h Host) bool { return h.Fault == Flaky && a.Status == Active && a.Former < 0 })
		var got []int
		for range 20 {
			res, body, err := get(t, n.HostURL(a.Host)+"/xrpc/com.atproto.repo.listRecords?repo="+a.DID+"&collection=app.sim.post")
			switch {
			case err != nil:
				got = append(got, -1) // stalled and dropped, or cut
			case json.Valid(body):
				got = append(got, res.StatusCode)
			default:
				got = append(got, -2)
			}
		}
		return got
	}
	first, second := outcomes(), outcomes()
	if !reflect.DeepEqual(first, second) {
		t.Fatalf("two runs met different faults: %v, %v", first, second)
	}
	failures := 0
	for _, o := range first {
		if o != 200 {
			failures++
		}
	}
	if failures == 0 || failures == len(first) {
		t.Errorf("a flaky host failed %d of %d answers: %v", failures, len(first), first)
	}
}

func TestListingsPageEveryRecordAndRepo(t *testing.T) {
	spec := Small(9)
	spec.FlakyFailure, spec.RateLimited = 0, 0
	n := start(t, spec)
	a := find(t, n, func(a Account, h Host) bool { return h.Fault == Healthy && a.Status == Active && a.Records > 120 })
	seen, cursor := map[string]bool{}, ""
	for {
		_, body, err := get(t, n.HostURL(a.Host)+"/xrpc/com.atproto.repo.listRecords?limit=100&collection=app.sim.post&repo="+a.DID+"&cursor="+cursor)
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Cursor  string
			Records []struct{ URI string }
		}
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Records {
			seen[r.URI] = true
		}
		if page.Cursor == "" {
			break
		}
		cursor = page.Cursor
	}
	if len(seen) != a.Records {
		t.Errorf("listRecords paged %d of %d records", len(seen), a.Records)
	}
	dids, cursor := map[string]bool{}, ""
	for {
		_, body, err := get(t, n.RelayURL()+"/xrpc/com.atproto.sync.listRepos?limit=40&cursor="+cursor)
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Cursor string
			Repos  []struct{ DID string }
		}
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Repos {
			dids[r.DID] = true
		}
		if page.Cursor == "" {
			break
		}
		cursor = page.Cursor
	}
	if len(dids) != len(n.Plan.Accounts) {
		t.Errorf("the relay listed %d of %d accounts", len(dids), len(n.Plan.Accounts))
	}
}

func TestBound(t *testing.T) {
	p := Draw(Small(11))
	wide, err := p.Bound(1000, 1000)
	if err != nil {
		t.Fatal(err)
	}
	narrow, err := p.Bound(2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if wide.Records != p.Records() || wide.Seconds <= 0 || narrow.Seconds <= wide.Seconds || narrow.Binding != "concurrency" {
		t.Errorf("wide %v, narrow %v", wide, narrow)
	}
}
