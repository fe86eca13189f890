package serviceauth_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/serviceauth"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
)

// now is the fixed clock of the tests, in the middle of a second.
var now = time.Unix(1_900_000_000, 600_000_000)

// countingDirectory counts the DID look-ups that reach the PLC stand-in.
type countingDirectory struct {
	identity.Directory
	lookups atomic.Int64
}

func (d *countingDirectory) LookupDID(ctx context.Context, did syntax.DID) (*identity.Identity, error) {
	d.lookups.Add(1)
	return d.Directory.LookupDID(ctx, did)
}

func (d *countingDirectory) Lookup(ctx context.Context, atid syntax.AtIdentifier) (*identity.Identity, error) {
	if did, err := atid.AsDID(); err == nil {
		return d.LookupDID(ctx, did)
	}
	return d.Directory.Lookup(ctx, atid)
}

type fixture struct {
	plc      *testenv.PLC
	base     *countingDirectory
	verifier *serviceauth.Verifier
}

func newFixture(t *testing.T) *fixture {
	plc := testenv.NewPLC(t)
	base := &countingDirectory{Directory: &identity.BaseDirectory{PLCURL: plc.URL, SkipHandleVerification: true}}
	dir := identity.NewCacheDirectory(base, 1000, time.Hour, time.Minute, time.Minute)
	return &fixture{plc: plc, base: base, verifier: &serviceauth.Verifier{Directory: dir, Now: func() time.Time { return now },
		Audiences: []string{"did:web:lexview.test"}}}
}

func claims(a *testenv.Account, extra map[string]any) map[string]any {
	c := map[string]any{"iss": a.DID.String(), "aud": "did:web:lexview.test", "exp": now.Unix() + 60, "iat": now.Unix(), "lxm": "com.example.method"}
	for k, v := range extra {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

func mustRefuse(t *testing.T, v *serviceauth.Verifier, what, token string) {
	t.Helper()
	if _, err := v.Verify(context.Background(), token); !errors.Is(err, serviceauth.ErrInvalidToken) {
		t.Errorf("%s: err %v, want ErrInvalidToken", what, err)
	}
}

func mustAccept(t *testing.T, v *serviceauth.Verifier, what, token string) serviceauth.Claims {
	t.Helper()
	c, err := v.Verify(context.Background(), token)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return c
}

func TestAlgorithms(t *testing.T) {
	f := newFixture(t)
	p256 := f.plc.NewAccount(t, false, "https://pds.test")
	k256 := f.plc.NewAccount(t, true, "https://pds.test")
	c := mustAccept(t, f.verifier, "ES256", p256.JWT(t, nil, claims(p256, nil)))
	if c.Issuer != p256.DID || c.Audience != "did:web:lexview.test" || c.Method != "com.example.method" || !c.Expires.Equal(time.Unix(now.Unix()+60, 0)) {
		t.Fatalf("claims: %+v", c)
	}
	mustAccept(t, f.verifier, "ES256K", k256.JWT(t, nil, claims(k256, nil)))
	mustAccept(t, f.verifier, "no typ", p256.JWT(t, map[string]any{"typ": nil}, claims(p256, nil)))

	for _, alg := range []string{"none", "HS256", "RS256", "ES384", "EdDSA", "es256", ""} {
		mustRefuse(t, f.verifier, "alg "+alg, p256.JWT(t, map[string]any{"alg": alg}, claims(p256, nil)))
	}
	// An unsigned token in the usual `alg: none` form.
	h, _ := json.Marshal(map[string]any{"alg": "none", "typ": "JWT"})
	b, _ := json.Marshal(claims(p256, nil))
	mustRefuse(t, f.verifier, "unsigned", base64.RawURLEncoding.EncodeToString(h)+"."+base64.RawURLEncoding.EncodeToString(b)+".")
	// The algorithm must match the issuer's key type.
	mustRefuse(t, f.verifier, "ES256K header, P-256 key", p256.JWT(t, map[string]any{"alg": "ES256K"}, claims(p256, nil)))
	mustRefuse(t, f.verifier, "ES256 header, K-256 key", k256.JWT(t, map[string]any{"alg": "ES256"}, claims(k256, nil)))
}

func TestTokenTypes(t *testing.T) {
	f := newFixture(t)
	a := f.plc.NewAccount(t, false, "https://pds.test")
	for _, typ := range []string{"at+jwt", "AT+JWT", "At+Jwt", "refresh+jwt", "Refresh+JWT", "dpop+jwt", "DPOP+JWT", "application/at+jwt", " dpop+jwt "} {
		mustRefuse(t, f.verifier, "typ "+typ, a.JWT(t, map[string]any{"typ": typ}, claims(a, nil)))
	}
	for _, typ := range []string{"JWT", "jwt"} {
		mustAccept(t, f.verifier, "typ "+typ, a.JWT(t, map[string]any{"typ": typ}, claims(a, nil)))
	}
}

func TestExpiry(t *testing.T) {
	f := newFixture(t)
	a := f.plc.NewAccount(t, true, "https://pds.test")
	mustRefuse(t, f.verifier, "expired", a.JWT(t, nil, claims(a, map[string]any{"exp": now.Unix() - 3600})))
	mustRefuse(t, f.verifier, "exp is now", a.JWT(t, nil, claims(a, map[string]any{"exp": now.Unix()})))
	mustAccept(t, f.verifier, "exp is now+1", a.JWT(t, nil, claims(a, map[string]any{"exp": now.Unix() + 1})))
	mustRefuse(t, f.verifier, "no exp", a.JWT(t, nil, claims(a, map[string]any{"exp": nil})))
	mustRefuse(t, f.verifier, "exp null", a.JWT(t, map[string]any{}, map[string]any{"iss": a.DID.String(), "exp": json.RawMessage("null")}))
	mustRefuse(t, f.verifier, "exp zero", a.JWT(t, nil, claims(a, map[string]any{"exp": 0})))
	mustRefuse(t, f.verifier, "exp huge", a.JWT(t, nil, claims(a, map[string]any{"exp": 1e300})))
	mustRefuse(t, f.verifier, "exp text", a.JWT(t, nil, claims(a, map[string]any{"exp": "soon"})))
	mustRefuse(t, f.verifier, "exp numeric string", a.JWT(t, nil, claims(a, map[string]any{"exp": fmt.Sprint(now.Unix() + 60)})))
	mustRefuse(t, f.verifier, "fractional exp in its last second", a.JWT(t, nil, claims(a, map[string]any{"exp": float64(now.Unix()) + 0.5})))
	// The same token is accepted until its expiry second and refused from it.
	tok := a.JWT(t, nil, claims(a, map[string]any{"exp": now.Unix() + 10}))
	v := serviceauth.Verifier{Directory: f.verifier.Directory, Audiences: f.verifier.Audiences}
	v.Now = func() time.Time { return time.Unix(now.Unix()+9, 999_999_999) }
	mustAccept(t, &v, "last instant", tok)
	v.Now = func() time.Time { return time.Unix(now.Unix()+10, 0) }
	mustRefuse(t, &v, "expiry second", tok)
}

func TestSignatureAndClaims(t *testing.T) {
	f := newFixture(t)
	a := f.plc.NewAccount(t, false, "https://pds.test")
	other := f.plc.NewAccount(t, false, "https://pds.test")
	tok := a.JWT(t, nil, claims(a, nil))
	mustAccept(t, f.verifier, "valid", tok)

	parts := strings.Split(tok, ".")
	raw, _ := base64.RawURLEncoding.DecodeString(parts[2])
	raw[10] ^= 0x01
	mustRefuse(t, f.verifier, "flipped signature bit", parts[0]+"."+parts[1]+"."+base64.RawURLEncoding.EncodeToString(raw))
	mustRefuse(t, f.verifier, "short signature", tok[:len(tok)-4])
	mustRefuse(t, f.verifier, "signed by another account", other.JWT(t, nil, claims(a, nil)))
	// A payload changed after signing.
	forged, _ := json.Marshal(claims(other, nil))
	mustRefuse(t, f.verifier, "swapped payload", parts[0]+"."+base64.RawURLEncoding.EncodeToString(forged)+"."+parts[2])

	mustRefuse(t, f.verifier, "iss not a DID", a.JWT(t, nil, claims(a, map[string]any{"iss": "alice.test"})))
	mustRefuse(t, f.verifier, "unknown issuer", a.JWT(t, nil, claims(a, map[string]any{"iss": "did:plc:unregistered0000000000"})))
	mustRefuse(t, f.verifier, "aud list of two", a.JWT(t, nil, claims(a, map[string]any{"aud": []string{"a", "b"}})))
	mustAccept(t, f.verifier, "aud list of one", a.JWT(t, nil, claims(a, map[string]any{"aud": []string{"did:web:lexview.test"}})))
	for _, bad := range []string{"", "a.b", "a.b.c.d", "....", "!!.??.**", strings.Repeat("A", serviceauth.MaxTokenSize+1)} {
		mustRefuse(t, f.verifier, "malformed "+bad[:min(len(bad), 10)], bad)
	}
}

func TestAudiences(t *testing.T) {
	f := newFixture(t)
	a := f.plc.NewAccount(t, false, "https://pds.test")
	v := serviceauth.Verifier{Directory: f.verifier.Directory, Now: f.verifier.Now}
	v.Audiences = []string{"did:web:lexview.test", "did:web:other.test"}
	mustAccept(t, &v, "listed audience", a.JWT(t, nil, claims(a, nil)))
	mustAccept(t, &v, "second listed audience", a.JWT(t, nil, claims(a, map[string]any{"aud": "did:web:other.test"})))
	mustRefuse(t, &v, "other audience", a.JWT(t, nil, claims(a, map[string]any{"aud": "did:web:evil.test"})))
	mustRefuse(t, &v, "no audience", a.JWT(t, nil, claims(a, map[string]any{"aud": nil})))
	// A service fragment names a service of the DID (a PDS proxying with
	// atproto-proxy: did:web:lexview.test#bsky_appview).
	mustAccept(t, &v, "service fragment", a.JWT(t, nil, claims(a, map[string]any{"aud": "did:web:lexview.test#bsky_appview"})))
	mustRefuse(t, &v, "empty fragment", a.JWT(t, nil, claims(a, map[string]any{"aud": "did:web:lexview.test#"})))
	mustRefuse(t, &v, "other DID's fragment", a.JWT(t, nil, claims(a, map[string]any{"aud": "did:web:evil.test#did:web:lexview.test"})))
	// No audience configured: nothing is accepted.
	none := serviceauth.Verifier{Directory: f.verifier.Directory, Now: f.verifier.Now}
	mustRefuse(t, &none, "no audiences configured", a.JWT(t, nil, claims(a, nil)))
	// AnyAudience: the interface specification's literal rule.
	v.Audiences = []string{serviceauth.AnyAudience}
	mustAccept(t, &v, "any audience", a.JWT(t, nil, claims(a, map[string]any{"aud": "did:web:evil.test"})))
	mustAccept(t, &v, "any audience, none given", a.JWT(t, nil, claims(a, map[string]any{"aud": nil})))
}

// TestRefusalsSayWhy: the refusal text names the reason, and never the
// details of a resolution failure.
func TestRefusalsSayWhy(t *testing.T) {
	f := newFixture(t)
	a := f.plc.NewAccount(t, false, "https://pds.test")
	for _, tc := range []struct {
		name, token, want string
	}{
		{"expired", a.JWT(t, nil, claims(a, map[string]any{"exp": now.Unix() - 1})), "invalid service auth token: token expired"},
		{"audience", a.JWT(t, nil, claims(a, map[string]any{"aud": "did:web:evil.test"})), `invalid service auth token: audience "did:web:evil.test" is not this service`},
		{"unknown issuer", a.JWT(t, nil, claims(a, map[string]any{"iss": "did:plc:unknownissuer0000000000"})), "invalid service auth token: the issuer's DID document could not be resolved"},
	} {
		_, err := f.verifier.Verify(context.Background(), tc.token)
		if err == nil || err.Error() != tc.want || !errors.Is(err, serviceauth.ErrInvalidToken) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
		if tc.name == "unknown issuer" && serviceauth.Cause(err) == nil {
			t.Errorf("%s: the cause is lost", tc.name)
		}
	}
}

// TestKeyRotation checks that the DID document is cached, and that a key
// rotation is picked up by purging and fetching it again once.
func TestKeyRotation(t *testing.T) {
	f := newFixture(t)
	a := f.plc.NewAccount(t, false, "https://pds.test")
	oldTok := a.JWT(t, nil, claims(a, nil))
	mustAccept(t, f.verifier, "first", oldTok)
	mustAccept(t, f.verifier, "cached", a.JWT(t, nil, claims(a, map[string]any{"jti": "2"})))
	if n := f.base.lookups.Load(); n != 1 {
		t.Fatalf("lookups before rotation: %d, want 1 (cached)", n)
	}

	stale := *a       // keeps signing with the old key
	a.SetKey(t, true) // rotate, and change the key type too
	mustAccept(t, f.verifier, "new key", a.JWT(t, nil, claims(a, nil)))
	if n := f.base.lookups.Load(); n != 2 {
		t.Fatalf("lookups after rotation: %d, want 2 (one refetch)", n)
	}
	mustAccept(t, f.verifier, "new key, cached", a.JWT(t, nil, claims(a, map[string]any{"jti": "3"})))
	if n := f.base.lookups.Load(); n != 2 {
		t.Fatalf("lookups with the new key cached: %d, want 2", n)
	}
	// Refused tokens refetch the document at most once per refresh interval:
	// the rotation refetch just happened, so this one does not.
	mustRefuse(t, f.verifier, "old key after rotation", oldTok)
	mustRefuse(t, f.verifier, "old key again", oldTok)
	if n := f.base.lookups.Load(); n != 2 {
		t.Fatalf("refused tokens refetched within the refresh interval: %d lookups, want 2", n)
	}
	later := now.Add(time.Minute)
	f.verifier.Now = func() time.Time { return later }
	mustRefuse(t, f.verifier, "old key, a minute later", stale.JWT(t, nil, claims(a, map[string]any{"exp": later.Unix() + 60})))
	if n := f.base.lookups.Load(); n != 3 {
		t.Fatalf("a refused token after the interval refetches once: %d lookups, want 3", n)
	}
}

func TestParseDoesNotResolve(t *testing.T) {
	f := newFixture(t)
	a := f.plc.NewAccount(t, false, "https://pds.test")
	tok := a.JWT(t, nil, claims(a, nil))
	c, signed, sig, err := f.verifier.Parse(tok)
	if err != nil || c.Issuer != a.DID || string(signed) != tok[:strings.LastIndexByte(tok, '.')] || len(sig) != 64 {
		t.Fatalf("Parse: %+v %q %d %v", c, signed, len(sig), err)
	}
	if n := f.base.lookups.Load(); n != 0 {
		t.Fatalf("Parse resolved the issuer")
	}
}

// FuzzParse feeds arbitrary strings to Parse: it never panics, and every
// refusal wraps ErrInvalidToken.
func FuzzParse(f *testing.F) {
	plc := testenv.NewPLC(f)
	for _, k256 := range []bool{false, true} {
		a := plc.NewAccount(f, k256, "https://pds.test")
		f.Add(a.JWT(f, nil, claims(a, nil)))
		f.Add(a.JWT(f, map[string]any{"typ": "at+jwt"}, claims(a, nil)))
		f.Add(a.JWT(f, nil, claims(a, map[string]any{"exp": now.Unix()})))
		f.Add(a.JWT(f, nil, claims(a, map[string]any{"exp": "1e3", "aud": []string{"x"}})))
	}
	for _, s := range []string{"", ".", "..", "a.b.c", "eyJhbGciOiJFUzI1NiJ9.e30.", "hv_abc", "\x00.\xff.\n"} {
		f.Add(s)
	}
	v := &serviceauth.Verifier{Now: func() time.Time { return now }}
	f.Fuzz(func(t *testing.T, token string) {
		c, signed, sig, err := v.Parse(token)
		if err != nil {
			if !errors.Is(err, serviceauth.ErrInvalidToken) {
				t.Fatalf("error does not wrap ErrInvalidToken: %v", err)
			}
			return
		}
		if _, perr := syntax.ParseDID(c.Issuer.String()); perr != nil || len(sig) != 64 ||
			!strings.HasPrefix(token, string(signed)+".") || !c.Expires.After(now.Add(-time.Second)) {
			t.Fatalf("accepted %q: claims %+v, signed %q, sig %d bytes", token, c, signed, len(sig))
		}
	})
}
