package oauth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/internal/oauthtest"
)

// patternReader yields n bytes without holding them: a streamed upload.
type patternReader struct{ left int64 }

func (p *patternReader) Read(b []byte) (int, error) {
	if p.left <= 0 {
		return 0, io.EOF
	}
	n := min(int64(len(b)), p.left)
	for i := range n {
		b[i] = byte(i)
	}
	p.left -= n
	return int(n), nil
}

func (f *fixture) upload(t *testing.T, size, declared int64) (*http.Response, []byte) {
	t.Helper()
	resp, err := f.client.Do(context.Background(), f.id, http.MethodPost, "/xrpc/com.atproto.repo.uploadBlob", nil,
		&patternReader{left: size}, "image/png", declared)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func TestStreamedUploadBlob(t *testing.T) {
	f := newFixture(t, oauthtest.Options{})
	const size = 3 << 20
	const sessionNSID, uploadNSID = "com.atproto.server.getSession", "com.atproto.repo.uploadBlob"

	// No nonce known yet: a pre-flight learns it, then the body is sent
	// once.
	resp, body := f.upload(t, size, size)
	var out struct {
		Blob struct {
			Type     string            `json:"$type"`
			Ref      map[string]string `json:"ref"`
			MimeType string            `json:"mimeType"`
			Size     int64             `json:"size"`
		} `json:"blob"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &out) != nil || out.Blob.Size != size ||
		out.Blob.Type != "blob" || out.Blob.MimeType != "image/png" || !strings.HasPrefix(out.Blob.Ref["$link"], "bafkrei") {
		t.Fatalf("upload: %d %s", resp.StatusCode, body)
	}
	if f.srv.Calls(sessionNSID) != 2 || f.srv.Calls(uploadNSID) != 1 || f.srv.Stats().BlobBytes != size {
		t.Fatalf("pre-flight %d, uploads %d, bytes %d", f.srv.Calls(sessionNSID), f.srv.Calls(uploadNSID), f.srv.Stats().BlobBytes)
	}

	// Nonce fresh: no pre-flight. Unknown length works too (chunked).
	if resp, body := f.upload(t, size, -1); resp.StatusCode != http.StatusOK {
		t.Fatalf("upload: %d %s", resp.StatusCode, body)
	}
	if f.srv.Calls(sessionNSID) != 2 || f.srv.Calls(uploadNSID) != 2 {
		t.Fatalf("unexpected pre-flight")
	}

	// The PDS rotated its nonce meanwhile: the streamed body cannot be
	// re-sent, so the challenge goes back to the caller unchanged...
	f.srv.RotateNonce()
	resp, body = f.upload(t, size, size)
	if resp.StatusCode != http.StatusUnauthorized || !bytes.Contains(body, []byte("use_dpop_nonce")) ||
		!strings.Contains(resp.Header.Get("WWW-Authenticate"), "use_dpop_nonce") {
		t.Fatalf("got %d %s", resp.StatusCode, body)
	}
	// ...and the nonce it carried is used next time.
	if resp, body := f.upload(t, size, size); resp.StatusCode != http.StatusOK {
		t.Fatalf("upload: %d %s", resp.StatusCode, body)
	}

	// A small body of unknown length is buffered and so retried.
	f.srv.RotateNonce()
	if resp, body := f.upload(t, 1000, -1); resp.StatusCode != http.StatusOK {
		t.Fatalf("small upload: %d %s", resp.StatusCode, body)
	}
	if got := f.srv.Stats().Blobs; got != 4 {
		t.Fatalf("%d blobs stored", got)
	}
}

func TestStreamedUploadRefreshesExpiringToken(t *testing.T) {
	f := newFixture(t, oauthtest.Options{})
	s := f.src.get(f.id)
	s.ExpiresAt = time.Now().Add(5 * time.Second)
	f.src.put(&s)
	f.srv.ExpireAccessTokens() // the old token would be refused
	if resp, body := f.upload(t, 2<<20, 2<<20); resp.StatusCode != http.StatusOK {
		t.Fatalf("upload: %d %s", resp.StatusCode, body)
	}
	if st := f.srv.Stats(); st.Refreshes != 1 || st.TokenRejections != 0 {
		t.Fatalf("stats %+v", st)
	}
}
