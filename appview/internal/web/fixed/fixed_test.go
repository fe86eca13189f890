package fixed_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/core/caller"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/service/profiles"
	"github.com/lexview/lexview/appview/internal/service/writepath"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/appview/internal/web/fixed"
	"github.com/lexview/lexview/appview/internal/web/userauth"
	"github.com/lexview/lexview/internal/oauthtest"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// rawCID is the CID (v1, raw codec, sha2-256, base32) of a blob's bytes,
// as the PDS stand-in computes it.
func rawCID(data []byte) string {
	sum := sha256.Sum256(data)
	enc := base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)
	return "b" + enc.EncodeToString(append([]byte{0x01, 0x55, 0x12, 0x20}, sum[:]...))
}

// countingReader yields n zero bytes and counts what was read.
type countingReader struct {
	n    int64
	read atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	left := c.n - c.read.Load()
	if left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	clear(p)
	c.read.Add(int64(len(p)))
	return len(p), nil
}

// upload posts body to uploadBlob as the device. length is the declared
// Content-Length (-1: none, the body is sent chunked). client may be nil.
func upload(t *testing.T, d *testenv.Device, client *http.Client, body io.Reader, length int64, contentType string, headers ...string) testenv.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, d.Env.URL+fixed.UploadBlobPath, io.NopCloser(body))
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = length
	if length < 0 {
		req.ContentLength = 0 // with a non-nil body: unknown, sent chunked
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("X-Client-Key", d.Client.Key)
	req.Header.Set("Authorization", "DPoP "+d.AccessToken)
	req.Header.Set("DPoP", d.Proof(t, http.MethodPost, fixed.UploadBlobPath))
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return testenv.Response{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
}

func TestUploadBlob(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		pds := oauthtest.New(t, oauthtest.Options{})
		acct := env.PLC.NewAccount(t, false, pds.URL)
		did := acct.DID.String()
		client, secret := env.NewClient(t, apiclients.NewClient{})
		d := env.SignIn(t, pds, testenv.AppClient{Key: client.Key, Secret: secret}, did)

		// 3 MiB with a declared length: streamed through, intact.
		blob := make([]byte, 3<<20)
		_, _ = rand.Read(blob)
		r := upload(t, d, nil, bytes.NewReader(blob), int64(len(blob)), "image/png")
		if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("upload: %d %s %s", r.Status, r.Header.Get("Content-Type"), r.Raw)
		}
		var out struct {
			Blob struct {
				Ref      map[string]string `json:"ref"`
				MimeType string            `json:"mimeType"`
				Size     int64             `json:"size"`
			} `json:"blob"`
		}
		r.JSON(t, &out)
		blobs := pds.Blobs()
		if len(blobs) != 1 || blobs[0].CID != rawCID(blob) || blobs[0].Size != 3<<20 || blobs[0].MimeType != "image/png" ||
			blobs[0].DID != did || out.Blob.Ref["$link"] != rawCID(blob) || out.Blob.Size != 3<<20 {
			t.Fatalf("blob on the PDS %+v, answer %s", blobs, r.Raw)
		}

		// The same without a declared length (chunked).
		_, _ = rand.Read(blob)
		if r := upload(t, d, nil, bytes.NewReader(blob), -1, "application/octet-stream"); r.Status != 200 {
			t.Fatalf("chunked upload: %d %s", r.Status, r.Raw)
		}
		if blobs := pds.Blobs(); len(blobs) != 2 || blobs[1].CID != rawCID(blob) || blobs[1].MimeType != "application/octet-stream" {
			t.Fatalf("chunked blob on the PDS: %+v", blobs)
		}
		if st := pds.Stats(); st.Blobs != 2 || st.BlobBytes != 6<<20 {
			t.Fatalf("PDS stats: %+v", st)
		}

		// A declared 60 MB is refused before anything is sent: the client
		// waits for 100 Continue, which never comes.
		calls := pds.Calls("com.atproto.repo.uploadBlob")
		tr := &http.Transport{ExpectContinueTimeout: time.Minute}
		defer tr.CloseIdleConnections()
		huge := &countingReader{n: 60_000_000}
		r = upload(t, d, &http.Client{Transport: tr}, huge, huge.n, "video/mp4", "Expect", "100-continue")
		if r.Status != 413 || r.Error(t) != "blob too large" || huge.read.Load() != 0 {
			t.Fatalf("declared 60 MB: %d %s, %d bytes sent", r.Status, r.Raw, huge.read.Load())
		}
		if pds.Calls("com.atproto.repo.uploadBlob") != calls {
			t.Fatal("the PDS was contacted for an oversized upload")
		}

		// Without a declared length the body is cut off past 50 MB.
		over := &countingReader{n: writepath.DefaultMaxBlobSize + 64<<10}
		if r := upload(t, d, nil, over, -1, "application/octet-stream"); r.Status != 413 {
			t.Fatalf("undeclared oversized body: %d %s", r.Status, r.Raw)
		}
		if st := pds.Stats(); st.Blobs != 2 {
			t.Fatalf("an oversized blob was stored: %+v", st)
		}

		// PDS errors come back unchanged.
		pds.FailNext("com.atproto.repo.uploadBlob", 400, "InvalidMimeType", "not allowed")
		r = upload(t, d, nil, strings.NewReader("x"), 1, "text/plain")
		if r.Status != 400 || r.Error(t) != "InvalidMimeType" {
			t.Fatalf("forwarded PDS error: %d %s", r.Status, r.Raw)
		}

		// Callers without a DPoP session are refused.
		if r := env.Do(t, "POST", fixed.UploadBlobPath, []byte("x"), "X-Client-Key", client.Key); r.Status != 401 {
			t.Fatalf("anonymous upload: %d %s", r.Status, r.Raw)
		}
		if r := env.Do(t, "POST", fixed.UploadBlobPath, []byte("x"), "X-Client-Key", client.Key,
			"Authorization", "Bearer "+acct.ServiceAuth(t)); r.Status != 401 || r.Error(t) != userauth.MsgNeedsDPoP {
			t.Fatalf("service-auth upload: %d %s", r.Status, r.Raw)
		}
		if r := env.Do(t, "POST", fixed.UploadBlobPath, []byte("x")); r.Status != 401 {
			t.Fatalf("upload without a client key: %d %s", r.Status, r.Raw)
		}
		// A replayed proof is refused like on any XRPC route.
		proof := d.Proof(t, "POST", fixed.UploadBlobPath)
		hdr := []string{"X-Client-Key", client.Key, "Authorization", "DPoP " + d.AccessToken, "DPoP", proof}
		env.Do(t, "POST", fixed.UploadBlobPath, []byte("x"), hdr...)
		if r := env.Do(t, "POST", fixed.UploadBlobPath, []byte("x"), hdr...); r.Status != 401 {
			t.Fatalf("replayed proof: %d %s", r.Status, r.Raw)
		}
	})
}

func TestGetProfile(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		pds := oauthtest.New(t, oauthtest.Options{})
		acct := env.PLC.NewAccount(t, false, pds.URL)
		did := acct.DID.String()
		other := env.PLC.NewAccount(t, false, pds.URL)
		client, secret := env.NewClient(t, apiclients.NewClient{})
		d := env.SignIn(t, pds, testenv.AppClient{Key: client.Key, Secret: secret}, did)

		avatar := rawCID([]byte("avatar"))
		if _, err := pds.SetProfile(did, json.RawMessage(`{"displayName":"Alice","description":"hi there",
			"avatar":{"$type":"blob","ref":{"$link":"`+avatar+`"},"mimeType":"image/png","size":6}}`)); err != nil {
			t.Fatal(err)
		}
		var p profiles.Profile
		r := d.Call(t, "GET", fixed.GetProfilePath, nil)
		if r.Status != 200 {
			t.Fatalf("own profile: %d %s", r.Status, r.Raw)
		}
		r.JSON(t, &p)
		want := profiles.Profile{DID: did, Handle: "account1.test", DisplayName: "Alice", Description: "hi there",
			AvatarURL: pds.URL + "/xrpc/com.atproto.sync.getBlob?did=" + url.QueryEscape(did) + "&cid=" + avatar}
		if p != want {
			t.Fatalf("own profile:\n got %+v\nwant %+v", p, want)
		}

		// Another actor without a profile record: empty strings, as strings.
		r = d.Call(t, "GET", fixed.GetProfilePath+"?actor="+other.DID.String(), nil)
		if r.Status != 200 {
			t.Fatalf("other profile: %d %s", r.Status, r.Raw)
		}
		m := r.Object(t)
		if m["did"] != other.DID.String() || m["handle"] != "account2.test" || m["displayName"] != "" ||
			m["description"] != "" || m["avatarURL"] != "" {
			t.Fatalf("profile without record: %s", r.Raw)
		}

		// Any authenticated caller may ask, e.g. with service auth.
		r = env.Do(t, "GET", fixed.GetProfilePath+"?actor="+did, nil, "X-Client-Key", client.Key,
			"Authorization", "Bearer "+other.ServiceAuth(t))
		if r.Status != 200 || r.Object(t)["displayName"] != "Alice" {
			t.Fatalf("service-auth caller: %d %s", r.Status, r.Raw)
		}

		// Unknown actors, bad input, and failing PDSes.
		if r := d.Call(t, "GET", fixed.GetProfilePath+"?actor=did:plc:nobodyhere0000000000000", nil); r.Status != 404 {
			t.Fatalf("unknown DID: %d %s", r.Status, r.Raw)
		}
		if r := d.Call(t, "GET", fixed.GetProfilePath+"?actor=%3Cnot%20an%20actor%3E", nil); r.Status != 400 {
			t.Fatalf("malformed actor: %d %s", r.Status, r.Raw)
		}
		down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"error":"InternalServerError"}`, http.StatusInternalServerError)
		}))
		defer down.Close()
		broken := env.PLC.NewAccount(t, false, down.URL)
		r = d.Call(t, "GET", fixed.GetProfilePath+"?actor="+broken.DID.String(), nil)
		if r.Status != 500 || r.Error(t) != "fetching the profile from the PDS failed" {
			t.Fatalf("failing PDS: %d %s", r.Status, r.Raw)
		}

		// Authentication is required.
		if r := env.Do(t, "GET", fixed.GetProfilePath, nil, "X-Client-Key", client.Key); r.Status != 401 {
			t.Fatalf("anonymous: %d %s", r.Status, r.Raw)
		}
		if r := env.Do(t, "GET", fixed.GetProfilePath, nil); r.Status != 401 || r.Error(t) != "Missing client identification" {
			t.Fatalf("no client key: %d %s", r.Status, r.Raw)
		}
	})
}

// fakePDS reads whatever body it is given, as a transport would, and
// answers 200; it writes no records.
type fakePDS struct {
	writepath.PDS
	calls atomic.Int64
}

func (f *fakePDS) Do(_ context.Context, _, _, _ string, _ url.Values, body io.Reader, _ string, _ int64) (*http.Response, error) {
	f.calls.Add(1)
	if _, err := io.Copy(io.Discard, body); err != nil {
		return nil, errors.Join(errors.New("transport: writing the body failed"), err)
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"blob":{}}`))}, nil
}

// TestUploadLimit checks the size limit against a configured maximum,
// with a caller put in place by the client middleware slot.
func TestUploadLimit(t *testing.T) {
	pds := &fakePDS{}
	asUser := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c := &caller.User{DID: "did:plc:alice", Via: caller.ViaDPoP, SessionID: "s1"}
			next.ServeHTTP(w, r.WithContext(caller.WithUser(r.Context(), c)))
		})
	}
	mux := http.NewServeMux()
	blobs := writepath.New(writepath.Options{PDS: pds, MaxBlobSize: 1000})
	fixed.New(fixed.Options{ClientMiddleware: asUser, Blobs: blobs}).Mount(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	post := func(body io.Reader, length int64) int {
		req, _ := http.NewRequest("POST", srv.URL+fixed.UploadBlobPath, io.NopCloser(body))
		req.ContentLength = length
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		size, declared int64
		want           int
		reachesPDS     bool
	}{
		{1000, 1000, 200, true},
		{1001, 1001, 413, false},
		{1000, 0, 200, true}, // chunked
		{1001, 0, 413, true}, // chunked, cut off while streaming
	} {
		before := pds.calls.Load()
		if got := post(&countingReader{n: tc.size}, tc.declared); got != tc.want {
			t.Errorf("size %d declared %d: status %d, want %d", tc.size, tc.declared, got, tc.want)
		}
		if reached := pds.calls.Load() > before; reached != tc.reachesPDS {
			t.Errorf("size %d declared %d: PDS contacted %v", tc.size, tc.declared, reached)
		}
	}
	if got := post(strings.NewReader(""), 0); got != 200 {
		t.Errorf("empty body: %d", got)
	}
}
