package sessioncookie_test

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/web/sessioncookie"
)

var (
	secret = []byte("0123456789abcdef0123456789abcdef")
	did    = syntax.DID("did:plc:sessionuser0000000000")
)

// clock is a settable test clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestRoundTrip(t *testing.T) {
	clk := &clock{time.Unix(1_900_000_000, 250_000_000)}
	c := sessioncookie.NewCodec(secret, clk.now)
	v := c.Encode(did, time.Hour)
	got, err := c.Decode(v)
	if err != nil || got != did {
		t.Fatalf("Decode: %q %v", got, err)
	}
	// Another codec with the same secret accepts it (e.g. after a restart).
	if got, err := sessioncookie.NewCodec(append([]byte(nil), secret...), clk.now).Decode(v); err != nil || got != did {
		t.Fatalf("same secret, new codec: %q %v", got, err)
	}
	// A nil clock means the real one.
	live := sessioncookie.NewCodec(secret, nil)
	if got, err := live.Decode(live.Encode(did, time.Minute)); err != nil || got != did {
		t.Fatalf("real clock: %q %v", got, err)
	}
}

func TestExpiry(t *testing.T) {
	clk := &clock{time.Unix(1_900_000_000, 0)}
	c := sessioncookie.NewCodec(secret, clk.now)
	v := c.Encode(did, 10*time.Second)
	clk.t = clk.t.Add(9*time.Second + 999*time.Millisecond)
	if _, err := c.Decode(v); err != nil {
		t.Fatalf("before expiry: %v", err)
	}
	clk.t = time.Unix(1_900_000_010, 0)
	if _, err := c.Decode(v); !errors.Is(err, sessioncookie.ErrInvalid) {
		t.Fatalf("at the expiry second: %v", err)
	}
	clk.t = clk.t.Add(time.Hour)
	if _, err := c.Decode(v); !errors.Is(err, sessioncookie.ErrInvalid) {
		t.Fatalf("after expiry: %v", err)
	}
}

func TestTamper(t *testing.T) {
	clk := &clock{time.Unix(1_900_000_000, 0)}
	c := sessioncookie.NewCodec(secret, clk.now)
	v := c.Encode(did, time.Hour)
	payload, sig, _ := strings.Cut(v, ".")

	body, _ := base64.RawURLEncoding.DecodeString(payload)
	forged := base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(body), "sessionuser", "attackeruser", 1)))
	longer := base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(body), `"exp":`, `"exp":9`, 1)))
	rawSig, _ := base64.RawURLEncoding.DecodeString(sig)
	rawSig[0] ^= 0x80
	for name, bad := range map[string]string{
		"other DID, same signature": forged + "." + sig,
		"later expiry":              longer + "." + sig,
		"flipped signature bit":     payload + "." + base64.RawURLEncoding.EncodeToString(rawSig),
		"truncated signature":       payload + "." + sig[:len(sig)-2],
		"no signature":              payload + ".",
		"no separator":              payload + sig,
		"empty":                     "",
		"extra segment":             v + ".x",
		"signature not base64":      payload + ".!!!",
		"oversized":                 strings.Repeat("a", 3000) + "." + sig,
	} {
		if got, err := c.Decode(bad); !errors.Is(err, sessioncookie.ErrInvalid) {
			t.Errorf("%s: accepted as %q (%v)", name, got, err)
		}
	}
	// A correctly signed value whose DID is not valid is refused too.
	if got, err := c.Decode(c.Encode(syntax.DID("not a did"), time.Hour)); !errors.Is(err, sessioncookie.ErrInvalid) {
		t.Errorf("signed invalid DID accepted as %q (%v)", got, err)
	}
}

func TestWrongSecret(t *testing.T) {
	c := sessioncookie.NewCodec(secret, nil)
	v := c.Encode(did, time.Hour)
	for _, other := range [][]byte{[]byte("another secret of at least 32 bytes!"), nil, secret[:31]} {
		if got, err := sessioncookie.NewCodec(other, nil).Decode(v); !errors.Is(err, sessioncookie.ErrInvalid) {
			t.Errorf("secret %q accepted the value as %q (%v)", other, got, err)
		}
	}
}

func TestCookie(t *testing.T) {
	c := sessioncookie.NewCodec(secret, nil)
	ck := c.Cookie(did, 2*time.Hour, true)
	if ck.Name != sessioncookie.CookieName || !ck.HttpOnly || !ck.Secure || ck.SameSite != http.SameSiteLaxMode ||
		ck.Path != "/" || ck.MaxAge != 7200 {
		t.Fatalf("cookie: %+v", ck)
	}
	r := httptest.NewRequest("GET", "/admin/users", nil)
	r.AddCookie(ck)
	if got, err := c.FromRequest(r); err != nil || got != did {
		t.Fatalf("FromRequest: %q %v", got, err)
	}
	if _, err := c.FromRequest(httptest.NewRequest("GET", "/", nil)); !errors.Is(err, http.ErrNoCookie) {
		t.Fatalf("no cookie: %v", err)
	}
	r = httptest.NewRequest("GET", "/", nil)
	r.AddCookie(&http.Cookie{Name: sessioncookie.CookieName, Value: "garbage"})
	if _, err := c.FromRequest(r); !errors.Is(err, sessioncookie.ErrInvalid) {
		t.Fatalf("bad cookie: %v", err)
	}
}
