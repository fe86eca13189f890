package oauth

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestDPoPChallengeError(t *testing.T) {
	for _, tc := range []struct{ header, want string }{
		{`DPoP error="use_dpop_nonce", error_description="Resource server requires nonce in DPoP proof"`, "use_dpop_nonce"},
		{`DPoP algs="ES256", error="invalid_token", error_description="token \"expired\""`, "invalid_token"},
		{`dpop error=invalid_token`, "invalid_token"},
		{`Bearer realm="pds", error="invalid_token", DPoP algs="ES256"`, ""},
		{`Bearer realm="pds", DPoP algs="ES256", error="use_dpop_nonce"`, "use_dpop_nonce"},
		{`DPoP algs="ES256"`, ""},
		{`Basic realm="x"`, ""},
		{``, ""},
		{`DPoP error="unterminated`, "unterminated"},
		{`DPoP ,,, error = "use_dpop_nonce"`, "use_dpop_nonce"},
		{`"`, ""},
	} {
		if got := dpopChallengeError(tc.header); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.header, got, tc.want)
		}
	}
}

func TestClassifyKeepsBody(t *testing.T) {
	for _, tc := range []struct {
		status int
		header string
		body   string
		want   challenge
	}{
		{401, `DPoP error="use_dpop_nonce"`, `{"error":"use_dpop_nonce"}`, challengeNonce},
		{400, ``, `{"error":"use_dpop_nonce","error_description":"x"}`, challengeNonce},
		{401, `DPoP error="invalid_token"`, `{"error":"ExpiredToken"}`, challengeToken},
		{401, ``, `{"error":"ExpiredToken","message":"token expired"}`, challengeToken},
		{401, ``, `{"error":"InvalidToken"}`, challengeToken},
		{400, ``, `{"error":"ExpiredToken"}`, challengeNone},
		{401, ``, `{"error":"AuthenticationRequired"}`, challengeNone},
		{401, ``, `not json`, challengeNone},
		{500, `DPoP error="use_dpop_nonce"`, `{"error":"use_dpop_nonce"}`, challengeNone},
		{200, ``, `{"ok":true}`, challengeNone},
	} {
		resp := &http.Response{StatusCode: tc.status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(tc.body))}
		if tc.header != "" {
			resp.Header.Set("WWW-Authenticate", tc.header)
		}
		if got := classify(resp); got != tc.want {
			t.Errorf("%d %q %s: got %d, want %d", tc.status, tc.header, tc.body, got, tc.want)
		}
		if b, _ := io.ReadAll(resp.Body); string(b) != tc.body {
			t.Errorf("body changed: %q", b)
		}
	}
}

func FuzzDPoPChallengeError(f *testing.F) {
	f.Add(`DPoP error="use_dpop_nonce", error_description="x"`)
	f.Add(`Bearer realm="a\"b", DPoP error=invalid_token`)
	f.Fuzz(func(t *testing.T, h string) {
		_ = dpopChallengeError(h) // must terminate without panicking
	})
}
