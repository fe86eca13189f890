package oauth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lexview/lexview/internal/oauthtest"
	"github.com/lexview/lexview/oauth"
)

const (
	testDID        = "did:plc:alice"
	testClientID   = "https://app.example/client-metadata.json"
	testCollection = "app.example.note"
	createNSID     = "com.atproto.repo.createRecord"
)

func TestCreateRecordAfterNonceChallenge(t *testing.T) {
	f := newFixture(t, oauthtest.Options{})
	status, body, res := f.create(t, "hello")
	if status != http.StatusOK || res == nil {
		t.Fatalf("create: %d %s", status, body)
	}
	if st := f.srv.Stats(); st.NonceChallenges != 1 || f.srv.Calls(createNSID) != 2 {
		t.Fatalf("want one challenge and one retry; challenges %d, calls %d", st.NonceChallenges, f.srv.Calls(createNSID))
	}
	if !strings.HasPrefix(res.URI, "at://"+testDID+"/"+testCollection+"/") || res.CID == "" || res.Rev == "" || res.CommitCID == "" {
		t.Fatalf("result %+v", res)
	}
	rec, ok := f.srv.Record(res.URI)
	if !ok || rec.CID != res.CID {
		t.Fatalf("PDS did not store %s: %+v", res.URI, rec)
	}
	var v map[string]string
	if err := json.Unmarshal(rec.Value, &v); err != nil || v["text"] != "hello" || v["$type"] != testCollection {
		t.Fatalf("stored value %s", rec.Value)
	}

	// The nonce is remembered: the next write needs no retry.
	f.create(t, "again")
	if st := f.srv.Stats(); st.NonceChallenges != 1 || f.srv.Calls(createNSID) != 3 {
		t.Fatalf("remembered nonce not used; challenges %d, calls %d", st.NonceChallenges, f.srv.Calls(createNSID))
	}
	// After a rotation, exactly one retry again, with the body re-sent.
	f.srv.RotateNonce()
	status, _, res = f.create(t, "rotated")
	if status != http.StatusOK || f.srv.Stats().NonceChallenges != 2 || f.srv.Calls(createNSID) != 5 {
		t.Fatalf("after rotation: status %d, challenges %d, calls %d", status, f.srv.Stats().NonceChallenges, f.srv.Calls(createNSID))
	}
	if rec, _ := f.srv.Record(res.URI); !strings.Contains(string(rec.Value), "rotated") {
		t.Fatalf("retried body lost: %s", rec.Value)
	}
}

func TestExpiredTokenRefreshedOnce(t *testing.T) {
	f := newFixture(t, oauthtest.Options{})
	f.warm(t)
	before := f.src.get(f.id)
	f.srv.ExpireAccessTokens()

	if status, body, _ := f.create(t, "after expiry"); status != http.StatusOK {
		t.Fatalf("create: %d %s", status, body)
	}
	st := f.srv.Stats()
	if st.Refreshes != 1 || st.TokenRejections != 1 || st.MetadataRequests != 1 {
		t.Fatalf("stats %+v", st)
	}
	after := f.src.get(f.id)
	if after.Version != before.Version+1 || after.AccessToken == before.AccessToken || after.RefreshToken == before.RefreshToken {
		t.Fatalf("refreshed tokens not saved: version %d", after.Version)
	}
	if !after.ExpiresAt.After(time.Now().Add(50 * time.Minute)) {
		t.Fatalf("expiry not updated: %v", after.ExpiresAt)
	}

	// A second expiry refreshes again with the rotated refresh token; the
	// metadata comes from the cache.
	f.srv.ExpireAccessTokens()
	if status, body, _ := f.create(t, "second expiry"); status != http.StatusOK {
		t.Fatalf("create: %d %s", status, body)
	}
	if st := f.srv.Stats(); st.Refreshes != 2 || st.MetadataRequests != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestProactiveRefreshBeforeExpiry(t *testing.T) {
	f := newFixture(t, oauthtest.Options{})
	s := f.src.get(f.id)
	s.ExpiresAt = time.Now().Add(10 * time.Second) // within the 30 s skew
	f.src.put(&s)
	if status, body, _ := f.create(t, "soon expired"); status != http.StatusOK {
		t.Fatalf("create: %d %s", status, body)
	}
	if st := f.srv.Stats(); st.Refreshes != 1 || st.TokenRejections != 0 {
		t.Fatalf("want a refresh before sending; stats %+v", st)
	}
}

func TestConcurrentRequestsRefreshOnce(t *testing.T) {
	f := newFixture(t, oauthtest.Options{})
	f.warm(t)
	f.srv.ExpireAccessTokens()

	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			status, body, _, err := f.client.CreateRecord(context.Background(), f.id, testCollection,
				json.RawMessage(fmt.Sprintf(`{"text":"concurrent %d"}`, i)), "")
			if err == nil && status != http.StatusOK {
				err = fmt.Errorf("status %d: %s", status, body)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if st := f.srv.Stats(); st.Refreshes != 1 || st.TokenRequests != 1 {
		t.Fatalf("want exactly one refresh; stats %+v", st)
	}
	if saves := f.src.saves.Load(); saves != 1 {
		t.Fatalf("%d saves", saves)
	}
	if got := len(f.srv.Records()); got != n+1 {
		t.Fatalf("%d records stored, want %d", got, n+1)
	}
}

func TestStaleSaveReloadsWinner(t *testing.T) {
	f := newFixture(t, oauthtest.Options{})
	f.warm(t)
	f.srv.ExpireAccessTokens()
	jkt, _ := oauth.JWKThumbprint(&f.key.PublicKey)

	// Another instance refreshes the session while this one's refresh is
	// in flight, and saves first.
	var winner oauth.UserSession
	f.src.onSave = func(n int64) {
		if n != 1 {
			return
		}
		w := f.src.get(f.id)
		w.AccessToken, w.RefreshToken = f.srv.IssueTokens(testDID, jkt)
		w.Version++
		f.src.put(&w)
		winner = w
	}
	if status, body, _ := f.create(t, "lost the race"); status != http.StatusOK {
		t.Fatalf("create: %d %s", status, body)
	}
	got := f.src.get(f.id)
	if got.Version != winner.Version || got.AccessToken != winner.AccessToken {
		t.Fatalf("the winner's tokens were overwritten or lost: version %d", got.Version)
	}
	if saves := f.src.saves.Load(); saves != 1 {
		t.Fatalf("%d saves, want 1 (no second refresh)", saves)
	}
	if st := f.srv.Stats(); st.Refreshes != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestRefreshTokenUsedByAnotherInstance(t *testing.T) {
	f := newFixture(t, oauthtest.Options{})
	f.warm(t)
	f.srv.ExpireAccessTokens()
	other := f.newClient() // another Lexview instance on the same store

	// Between this instance's re-read and its token request, the other
	// instance refreshes with the same refresh token and saves.
	var loads atomic.Int64
	f.src.onLoad = func(_ int64, s *oauth.UserSession) *oauth.UserSession {
		if loads.Add(1) != 2 { // the refresh's re-read
			return nil
		}
		stale := *s
		if _, err := other.Refresh(context.Background(), &stale); err != nil {
			t.Errorf("other instance's refresh: %v", err)
		}
		return &stale
	}
	if status, body, _ := f.create(t, "after the other's refresh"); status != http.StatusOK {
		t.Fatalf("create: %d %s", status, body)
	}
	// The other instance: a nonce challenge (it had not met the server)
	// and its refresh; this one: a refresh refused as a replay, then no
	// new token request.
	st := f.srv.Stats()
	if st.TokenRequests != 3 || st.Refreshes != 1 || st.NonceChallenges != 2 {
		t.Fatalf("want one refused and one successful refresh; stats %+v", st)
	}
	if got := f.src.get(f.id); got.Version != 2 {
		t.Fatalf("session version %d, want 2", got.Version)
	}
}

func TestPDSErrorForwardedUnchanged(t *testing.T) {
	f := newFixture(t, oauthtest.Options{})
	f.warm(t)
	calls := f.srv.Calls(createNSID)

	status, body, res, err := f.client.CreateRecord(context.Background(), f.id, testCollection,
		json.RawMessage(`{"$type":"app.example.other","text":"x"}`), "")
	if err != nil || res != nil {
		t.Fatalf("err %v, result %+v", err, res)
	}
	want := `{"error":"InvalidRequest","message":"Invalid $type: expected app.example.note, got \"app.example.other\""}` + "\n"
	if status != http.StatusBadRequest || string(body) != want {
		t.Fatalf("got %d %q", status, body)
	}
	if got := f.srv.Calls(createNSID); got != calls+1 {
		t.Fatalf("an error was retried: %d calls", got-calls)
	}

	// Through Do, with headers and body as the PDS sent them.
	f.srv.FailNext(createNSID, http.StatusBadGateway, "UpstreamFailure", "try later")
	resp, err := f.client.Do(context.Background(), f.id, http.MethodPost, "/xrpc/"+createNSID, nil,
		strings.NewReader(`{}`), "application/json", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadGateway || string(b) != `{"error":"UpstreamFailure","message":"try later"}`+"\n" {
		t.Fatalf("got %d %q", resp.StatusCode, b)
	}

	// A 401 that is not about the token (writing another user's repo) is
	// forwarded without a refresh.
	status, body, _, err = f.client.PutRecord(context.Background(), f.id, "did:plc:bob", testCollection, "k1",
		json.RawMessage(`{"text":"x"}`), "")
	if err != nil || status != http.StatusUnauthorized || !bytes.Contains(body, []byte("AuthenticationRequired")) {
		t.Fatalf("got %d %s, err %v", status, body, err)
	}
	if st := f.srv.Stats(); st.Refreshes != 0 || st.TokenRequests != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestPutRecordSwap(t *testing.T) {
	f := newFixture(t, oauthtest.Options{})
	ctx := context.Background()
	status, body, first, err := f.client.PutRecord(ctx, f.id, testDID, testCollection, "self", json.RawMessage(`{"v":1}`), "")
	if err != nil || status != http.StatusOK || first.URI != "at://"+testDID+"/"+testCollection+"/self" {
		t.Fatalf("put: %d %s %v", status, body, err)
	}
	status, _, second, err := f.client.PutRecord(ctx, f.id, testDID, testCollection, "self", json.RawMessage(`{"v":2}`), first.CID)
	if err != nil || status != http.StatusOK || second.CID == first.CID {
		t.Fatalf("swap put: %d %v", status, err)
	}
	status, body, _, err = f.client.PutRecord(ctx, f.id, testDID, testCollection, "self", json.RawMessage(`{"v":3}`), first.CID)
	if err != nil || status != http.StatusBadRequest || !bytes.Contains(body, []byte("InvalidSwap")) {
		t.Fatalf("stale swap: %d %s %v", status, body, err)
	}
}

func TestTokenOfAnotherKeyRefused(t *testing.T) {
	f := newFixture(t, oauthtest.Options{})
	other, _ := oauth.GenerateKey()
	s := f.src.get(f.id) // tokens bound to f.key
	s.ID, s.DPoPKey = "stolen", other
	f.src.put(&s)

	// Directly: a valid proof by another key with the token is refused.
	signer, _ := oauth.NewSigner(other, nil)
	url := f.srv.URL + "/xrpc/com.atproto.server.getSession"
	proof, _ := signer.NewProof(http.MethodGet, url, s.AccessToken, f.srv.Nonce())
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "DPoP "+s.AccessToken)
	req.Header.Set("DPoP", proof)
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	wa := resp.Header.Get("WWW-Authenticate")
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(wa, `error="invalid_token"`) || !strings.Contains(wa, "another DPoP key") {
		t.Fatalf("got %d %q", resp.StatusCode, wa)
	}

	// Through the client: the token is refused, and so is the refresh
	// token (bound to the same other key); the session is kept.
	_, _, _, err = f.client.CreateRecord(context.Background(), "stolen", testCollection, json.RawMessage(`{}`), "")
	var re *oauth.RefreshError
	if !errors.As(err, &re) || re.Code != "invalid_grant" {
		t.Fatalf("want invalid_grant, got %v", err)
	}
	if st := f.srv.Stats(); st.Refreshes != 0 || st.TokenRejections != 2 {
		t.Fatalf("stats %+v", st)
	}
	if got := f.src.get("stolen"); got.Version != 1 {
		t.Fatal("session changed")
	}
}

func TestRevokedRefreshTokenIsAnError(t *testing.T) {
	f := newFixture(t, oauthtest.Options{})
	f.warm(t)
	f.srv.ExpireAccessTokens()
	f.srv.RevokeRefreshTokens()
	_, _, _, err := f.client.CreateRecord(context.Background(), f.id, testCollection, json.RawMessage(`{}`), "")
	var re *oauth.RefreshError
	if !errors.As(err, &re) || re.Code != "invalid_grant" || re.Status != http.StatusBadRequest {
		t.Fatalf("want invalid_grant, got %v", err)
	}
	if _, err := f.src.Load(context.Background(), f.id); err != nil {
		t.Fatal("session deleted")
	}
}

func TestRefreshNonceDanceAndClientAssertion(t *testing.T) {
	var seen sync.Map
	f := newFixture(t, oauthtest.Options{
		ClientID:               testClientID,
		RequireClientAssertion: true,
		VerifyClientAssertion: func(a string) error {
			if _, dup := seen.LoadOrStore(a, true); dup {
				return errors.New("assertion reused")
			}
			return nil
		},
	})
	var assertions atomic.Int64
	s := f.src.get(f.id)
	s.ExpiresAt = time.Now().Add(-time.Minute)
	s.ClientAssertion = func(_ context.Context, issuer string) (string, error) {
		if issuer != f.srv.URL {
			return "", fmt.Errorf("assertion for %s", issuer)
		}
		return fmt.Sprintf("assertion-%d", assertions.Add(1)), nil
	}
	f.src.put(&s)
	if status, body, _ := f.create(t, "confidential"); status != http.StatusOK {
		t.Fatalf("create: %d %s", status, body)
	}
	st := f.srv.Stats()
	// The refresh came first (proactive): the token endpoint demanded the
	// nonce, the retry got it, and the PDS accepted it straight away.
	if st.TokenRequests != 2 || st.Refreshes != 1 || st.NonceChallenges != 1 || f.srv.Calls(createNSID) != 1 {
		t.Fatalf("stats %+v, creates %d", st, f.srv.Calls(createNSID))
	}
	if assertions.Load() != 2 {
		t.Fatalf("%d assertions, want one per attempt", assertions.Load())
	}
}

func TestRefreshRefusesAnotherSubject(t *testing.T) {
	f := newFixture(t, oauthtest.Options{})
	s := f.src.get(f.id)
	s.DID = "did:plc:mallory" // the tokens are alice's
	f.src.put(&s)
	_, err := f.client.Refresh(context.Background(), &s)
	if err == nil || !strings.Contains(err.Error(), "not the session's") {
		t.Fatalf("got %v", err)
	}
	if got := f.src.get(f.id); got.Version != 1 {
		t.Fatal("tokens of another subject were saved")
	}
}

func TestRefreshOutlivesCancelledCaller(t *testing.T) {
	f := newFixture(t, oauthtest.Options{})
	s := f.src.get(f.id)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.client.Refresh(ctx, &s); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	// The rotated refresh token is stored anyway.
	deadline := time.Now().Add(5 * time.Second)
	for f.src.get(f.id).Version != 2 {
		if time.Now().After(deadline) {
			t.Fatal("the detached refresh never saved")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestDoUnknownSession(t *testing.T) {
	f := newFixture(t, oauthtest.Options{})
	_, err := f.client.Do(context.Background(), "nope", http.MethodGet, "/xrpc/com.atproto.server.getSession", nil, nil, "", 0)
	if !errors.Is(err, errNotFound) {
		t.Fatalf("got %v", err)
	}
}
