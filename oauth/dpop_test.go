package oauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	_ "crypto/sha512" // registers SHA-384 for ES384 proofs
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

var (
	testNow = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	testURL = "https://appview.test/xrpc/app.test.createThing"
)

func fixedClock(t time.Time) func() time.Time { return func() time.Time { return t } }

func mustKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustSigner(t testing.TB, k *ecdsa.PrivateKey, now time.Time) *Signer {
	t.Helper()
	s, err := NewSigner(k, fixedClock(now))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustProof(t testing.TB, s *Signer, method, url, token, nonce string) string {
	t.Helper()
	p, err := s.NewProof(method, url, token, nonce)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newTestVerifier() *Verifier { return NewVerifier(VerifierOptions{Now: fixedClock(testNow)}) }

// publicJWKMap is the jwk header of key: kty, crv, x, y.
func publicJWKMap(t testing.TB, k *ecdsa.PrivateKey) map[string]any {
	t.Helper()
	b, err := jose.JSONWebKey{Key: &k.PublicKey}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func b64JSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// craft builds a JWS by hand, so that every field can be wrong.
func craft(t testing.TB, header, claims map[string]any, sign func(in []byte) []byte) string {
	t.Helper()
	in := b64JSON(t, header) + "." + b64JSON(t, claims)
	return in + "." + base64.RawURLEncoding.EncodeToString(sign([]byte(in)))
}

func ecSign(k *ecdsa.PrivateKey, hash crypto.Hash) func([]byte) []byte {
	return func(in []byte) []byte {
		h := hash.New()
		h.Write(in)
		r, s, err := ecdsa.Sign(rand.Reader, k, h.Sum(nil))
		if err != nil {
			panic(err)
		}
		size := (k.Curve.Params().BitSize + 7) / 8
		out := make([]byte, 2*size)
		r.FillBytes(out[:size])
		s.FillBytes(out[size:])
		return out
	}
}

func goodHeader(t testing.TB, k *ecdsa.PrivateKey) map[string]any {
	return map[string]any{"typ": "dpop+jwt", "alg": "ES256", "jwk": publicJWKMap(t, k)}
}

func goodClaims(token string) map[string]any {
	c := map[string]any{"jti": randomID(), "htm": "POST", "htu": testURL, "iat": testNow.Unix()}
	if token != "" {
		c["ath"] = AccessTokenHash(token)
	}
	return c
}

func TestProofFromSignerVerifies(t *testing.T) {
	k := mustKey(t)
	s := mustSigner(t, k, testNow)
	v := newTestVerifier()
	proof := mustProof(t, s, "POST", testURL+"?x=1#frag", "tok", "srv-nonce")
	p, err := v.Verify(context.Background(), proof, "POST", testURL, "tok")
	if err != nil {
		t.Fatal(err)
	}
	jkt, _ := JWKThumbprint(&k.PublicKey)
	if p.JKT != jkt || p.JKT != s.JKT() || p.HTU != testURL || p.HTM != "POST" || !p.IAT.Equal(testNow) ||
		p.Nonce != "srv-nonce" || p.ATH != AccessTokenHash("tok") || p.JTI == "" || !p.Key.Equal(&k.PublicKey) {
		t.Fatalf("proof %+v", p)
	}
	// A proof without token has no ath and verifies without one.
	p2, err := v.Verify(context.Background(), mustProof(t, s, "GET", testURL, "", ""), "GET", testURL, "")
	if err != nil || p2.ATH != "" || p2.JTI == p.JTI {
		t.Fatalf("no-token proof: %+v %v", p2, err)
	}
}

func TestProofReplayRefused(t *testing.T) {
	s := mustSigner(t, mustKey(t), testNow)
	v := newTestVerifier()
	proof := mustProof(t, s, "POST", testURL, "tok", "")
	ctx := context.Background()
	// A failed check does not consume the jti...
	if _, err := v.Verify(ctx, proof, "POST", testURL+"x", "tok"); !errors.Is(err, ErrWrongURL) {
		t.Fatalf("wrong URL first: %v", err)
	}
	if _, err := v.Verify(ctx, proof, "POST", testURL, "tok"); err != nil {
		t.Fatalf("first use: %v", err)
	}
	// ...but a successful one does.
	_, err := v.Verify(ctx, proof, "POST", testURL, "tok")
	if !errors.Is(err, ErrReplay) || !errors.Is(err, ErrInvalidProof) {
		t.Fatalf("replay: %v", err)
	}
	// The same jti under another key is another proof.
	k2 := mustKey(t)
	var jti string
	{
		p, _ := ParseProof(proof)
		jti = p.JTI
	}
	c := goodClaims("tok")
	c["jti"] = jti
	other := craft(t, goodHeader(t, k2), c, ecSign(k2, crypto.SHA256))
	if _, err := v.Verify(ctx, other, "POST", testURL, "tok"); err != nil {
		t.Fatalf("same jti, other key: %v", err)
	}
}

func TestProofReplayRememberedForTheWholeWindow(t *testing.T) {
	now := testNow
	v := NewVerifier(VerifierOptions{Now: func() time.Time { return now }})
	proof := mustProof(t, mustSigner(t, mustKey(t), testNow), "POST", testURL, "", "")
	if _, err := v.Verify(context.Background(), proof, "POST", testURL, ""); err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{time.Minute, 4 * time.Minute, ProofWindow} {
		now = testNow.Add(d)
		if _, err := v.Verify(context.Background(), proof, "POST", testURL, ""); !errors.Is(err, ErrReplay) {
			t.Fatalf("at +%v: %v", d, err)
		}
	}
	now = testNow.Add(ProofWindow + time.Second)
	if _, err := v.Verify(context.Background(), proof, "POST", testURL, ""); !errors.Is(err, ErrExpiredProof) {
		t.Fatalf("after the window: %v", err)
	}
}

func TestProofRefusals(t *testing.T) {
	k := mustKey(t)
	s := mustSigner(t, k, testNow)
	ctx := context.Background()
	sign := ecSign(k, crypto.SHA256)
	withClaims := func(mod func(c map[string]any)) string {
		c := goodClaims("tok")
		mod(c)
		return craft(t, goodHeader(t, k), c, sign)
	}
	withHeader := func(mod func(h map[string]any)) string {
		h := goodHeader(t, k)
		mod(h)
		return craft(t, h, goodClaims("tok"), sign)
	}
	k384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	privJWK, _ := NewPrivateJWK(k)
	encoded := "https://appview.test/oauth/sessions/did%3Aplc%3Aabc"

	cases := []struct {
		name        string
		proof       string
		method, url string
		token       string
		want        error
	}{
		{"another URL", mustProof(t, s, "POST", testURL, "tok", ""), "POST", "https://appview.test/xrpc/other", "tok", ErrWrongURL},
		{"another host", mustProof(t, s, "POST", testURL, "tok", ""), "POST", strings.Replace(testURL, "appview.test", "evil.test", 1), "tok", ErrWrongURL},
		{"decoded DID path", mustProof(t, s, "DELETE", encoded, "tok", ""), "DELETE", "https://appview.test/oauth/sessions/did:plc:abc", "tok", ErrWrongURL},
		{"another method", mustProof(t, s, "POST", testURL, "tok", ""), "GET", testURL, "tok", ErrWrongMethod},
		{"lower-case method", mustProof(t, s, "post", testURL, "tok", ""), "POST", testURL, "tok", ErrWrongMethod},
		{"6 minutes old", mustProof(t, mustSigner(t, k, testNow.Add(-6*time.Minute)), "POST", testURL, "tok", ""), "POST", testURL, "tok", ErrExpiredProof},
		{"6 minutes ahead", mustProof(t, mustSigner(t, k, testNow.Add(6*time.Minute)), "POST", testURL, "tok", ""), "POST", testURL, "tok", ErrProofNotYetValid},
		{"missing ath", mustProof(t, s, "POST", testURL, "", ""), "POST", testURL, "tok", ErrBadATH},
		{"ath of another token", mustProof(t, s, "POST", testURL, "other", ""), "POST", testURL, "tok", ErrBadATH},
		{"typ JWT", withHeader(func(h map[string]any) { h["typ"] = "JWT" }), "POST", testURL, "tok", ErrProofType},
		{"no typ", withHeader(func(h map[string]any) { delete(h, "typ") }), "POST", testURL, "tok", ErrProofType},
		{"alg none", craft(t, map[string]any{"typ": "dpop+jwt", "alg": "none", "jwk": publicJWKMap(t, k)}, goodClaims("tok"),
			func([]byte) []byte { return nil }), "POST", testURL, "tok", ErrProofAlgorithm},
		{"alg HS256", craft(t, map[string]any{"typ": "dpop+jwt", "alg": "HS256", "jwk": publicJWKMap(t, k)}, goodClaims("tok"),
			func(in []byte) []byte { m := hmac.New(sha256.New, []byte("secret")); m.Write(in); return m.Sum(nil) }), "POST", testURL, "tok", ErrProofAlgorithm},
		{"alg ES384", craft(t, map[string]any{"typ": "dpop+jwt", "alg": "ES384", "jwk": publicJWKMap(t, k384)}, goodClaims("tok"),
			ecSign(k384, crypto.SHA384)), "POST", testURL, "tok", ErrProofAlgorithm},
		{"P-384 key claiming ES256", craft(t, map[string]any{"typ": "dpop+jwt", "alg": "ES256", "jwk": publicJWKMap(t, k384)}, goodClaims("tok"),
			ecSign(k384, crypto.SHA256)), "POST", testURL, "tok", ErrProofKey},
		{"jwk with private part", withHeader(func(h map[string]any) { h["jwk"].(map[string]any)["d"] = privJWK.D }), "POST", testURL, "tok", ErrProofKey},
		{"no jwk", withHeader(func(h map[string]any) { delete(h, "jwk") }), "POST", testURL, "tok", ErrProofKey},
		{"jwk not an object", withHeader(func(h map[string]any) { h["jwk"] = "x" }), "POST", testURL, "tok", ErrMalformedProof},
		{"jwk of another key", withHeader(func(h map[string]any) { h["jwk"] = publicJWKMap(t, mustKey(t)) }), "POST", testURL, "tok", ErrProofSignature},
		{"tampered payload", tamperPayload(t, mustProof(t, s, "POST", testURL, "tok", "")), "POST", testURL, "tok", ErrProofSignature},
		{"missing jti", withClaims(func(c map[string]any) { delete(c, "jti") }), "POST", testURL, "tok", ErrMissingJTI},
		{"missing iat", withClaims(func(c map[string]any) { delete(c, "iat") }), "POST", testURL, "tok", ErrMalformedProof},
		{"string iat", withClaims(func(c map[string]any) { c["iat"] = "now" }), "POST", testURL, "tok", ErrMalformedProof},
		{"empty", "", "POST", testURL, "tok", ErrMalformedProof},
		{"two parts", "a.b", "POST", testURL, "tok", ErrMalformedProof},
		{"four parts", mustProof(t, s, "POST", testURL, "tok", "") + ".x", "POST", testURL, "tok", ErrMalformedProof},
		{"too long", strings.Repeat("a", MaxProofSize+1), "POST", testURL, "tok", ErrMalformedProof},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newTestVerifier().Verify(ctx, tc.proof, tc.method, tc.url, tc.token)
			if !errors.Is(err, tc.want) || !errors.Is(err, ErrInvalidProof) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}

	// The encoded DID path verifies against the same encoded URL.
	if _, err := newTestVerifier().Verify(ctx, mustProof(t, s, "DELETE", encoded, "tok", ""), "DELETE", encoded, "tok"); err != nil {
		t.Fatalf("encoded path: %v", err)
	}
	// Four minutes old is inside the window; fractional iat is accepted.
	if _, err := newTestVerifier().Verify(ctx, mustProof(t, mustSigner(t, k, testNow.Add(-4*time.Minute)), "POST", testURL, "", ""), "POST", testURL, ""); err != nil {
		t.Fatalf("4 minutes old: %v", err)
	}
	frac := withClaims(func(c map[string]any) { c["iat"] = float64(testNow.Unix()) + 0.5 })
	if _, err := newTestVerifier().Verify(ctx, frac, "POST", testURL, "tok"); err != nil {
		t.Fatalf("fractional iat: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := newTestVerifier().Verify(cctx, mustProof(t, s, "POST", testURL, "", ""), "POST", testURL, ""); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
}

// tamperPayload changes htm in a signed proof without re-signing.
func tamperPayload(t testing.TB, proof string) string {
	parts := strings.Split(proof, ".")
	raw, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var c map[string]any
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	c["jti"] = "forged"
	parts[1] = b64JSON(t, c)
	return strings.Join(parts, ".")
}

// TestThumbprintRFC7638 checks the example of RFC 7638, section 3.1, and
// the canonical form for an EC key.
func TestThumbprintRFC7638(t *testing.T) {
	const rsaJWK = `{"kty":"RSA","n":"0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw","e":"AQAB","alg":"RS256","kid":"2011-04-29"}`
	var k jose.JSONWebKey
	if err := json.Unmarshal([]byte(rsaJWK), &k); err != nil {
		t.Fatal(err)
	}
	got, err := JWKThumbprint(k.Key)
	if err != nil || got != "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs" {
		t.Fatalf("RFC 7638 example: %q %v", got, err)
	}

	key := mustKey(t)
	j, _ := NewPrivateJWK(key)
	canonical := `{"crv":"P-256","kty":"EC","x":"` + j.X + `","y":"` + j.Y + `"}`
	sum := sha256.Sum256([]byte(canonical))
	got, err = JWKThumbprint(&key.PublicKey)
	if err != nil || got != base64.RawURLEncoding.EncodeToString(sum[:]) {
		t.Fatalf("EC thumbprint %q %v", got, err)
	}
}

func TestPrivateJWKRoundTrip(t *testing.T) {
	for range 50 { // exercise keys whose coordinates have leading zero bytes
		k := mustKey(t)
		j, err := NewPrivateJWK(k)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{j.X, j.Y, j.D} {
			if b, _ := base64.RawURLEncoding.DecodeString(s); len(b) != 32 || strings.ContainsAny(s, "=+/") {
				t.Fatalf("coordinate %q", s)
			}
		}
		data, err := MarshalPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParsePrivateKey(data)
		if err != nil || !back.Equal(k) {
			t.Fatalf("round trip: %v", err)
		}
	}
	j, _ := NewPrivateJWK(mustKey(t))
	j.X = j.Y
	if _, err := j.Key(); err == nil {
		t.Fatal("accepted a JWK whose x does not match d")
	}
	if _, err := ParsePrivateKey([]byte(`{"kty":"RSA"}`)); err == nil {
		t.Fatal("accepted an RSA JWK")
	}
	k384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if _, err := NewSigner(k384, nil); err == nil {
		t.Fatal("NewSigner accepted a P-384 key")
	}
}

func FuzzVerifyProof(f *testing.F) {
	k := mustKey(f)
	s := mustSigner(f, k, testNow)
	valid := mustProof(f, s, "POST", testURL, "tok", "")
	f.Add(valid, "tok")
	f.Add(tamperPayload(f, valid), "tok")
	f.Add(valid[:len(valid)/2], "")
	f.Add("eyJhbGciOiJFUzI1NiJ9.e30.", "")
	f.Add("..", "")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, proof, token string) {
		v := newTestVerifier()
		p, err := v.Verify(context.Background(), proof, "POST", testURL, token)
		if err != nil {
			if !errors.Is(err, ErrInvalidProof) {
				t.Fatalf("error outside ErrInvalidProof: %v", err)
			}
			return
		}
		if p.JKT == "" || p.JTI == "" || p.HTU != testURL {
			t.Fatalf("accepted proof lacks fields: %+v", p)
		}
	})
}

func BenchmarkVerifyProof(b *testing.B) {
	s := mustSigner(b, mustKey(b), testNow)
	v := newTestVerifier()
	proofs := make([]string, b.N) // unique jtis: each Verify inserts into the replay cache
	for i := range proofs {
		proofs[i] = mustProof(b, s, "POST", testURL, "access-token", "")
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := v.Verify(ctx, proofs[i], "POST", testURL, "access-token"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyProofParallel(b *testing.B) {
	s := mustSigner(b, mustKey(b), testNow)
	v := newTestVerifier()
	proofs := make(chan string, b.N)
	for range b.N {
		proofs <- mustProof(b, s, "POST", testURL, "access-token", "")
	}
	close(proofs)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := v.Verify(ctx, <-proofs, "POST", testURL, "access-token"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkNewProof(b *testing.B) {
	s := mustSigner(b, mustKey(b), testNow)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.NewProof("POST", testURL, "access-token", "nonce"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkP256VerifyBaseline is the bare ECDSA P-256 verification that
// dominates BenchmarkVerifyProof, for comparing figures across machines.
func BenchmarkP256VerifyBaseline(b *testing.B) {
	k := mustKey(b)
	h := sha256.Sum256([]byte("baseline"))
	sig, err := ecdsa.SignASN1(rand.Reader, k, h[:])
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if !ecdsa.VerifyASN1(&k.PublicKey, h[:], sig) {
			b.Fatal("verify failed")
		}
	}
}
