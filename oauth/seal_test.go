package oauth

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func testSealer(t testing.TB) *Sealer {
	t.Helper()
	s, err := NewSealer(bytes.Repeat([]byte{7}, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSealRoundTrip(t *testing.T) {
	s := testSealer(t)
	for _, plain := range []string{"", "a", "access-token-ey.J", strings.Repeat("x", 5000)} {
		sealed, err := s.SealString("session:access_token", plain)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(sealed, "v1:") || (len(plain) > 8 && strings.Contains(sealed, plain)) {
			t.Fatalf("sealed form %q", sealed)
		}
		got, err := s.OpenString("session:access_token", sealed)
		if err != nil || got != plain {
			t.Fatalf("open: %q, %v", got, err)
		}
	}
	a, _ := s.SealString("p", "same")
	b, _ := s.SealString("p", "same")
	if a == b {
		t.Fatal("two seals of one value are equal: nonce reused")
	}
}

func TestSealRefusesTamperingAndMisuse(t *testing.T) {
	s := testSealer(t)
	sealed, err := s.SealString("session:access_token", "secret token")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(sealed, "v1:"))
	for i := range raw {
		mod := bytes.Clone(raw)
		mod[i] ^= 0x01
		bad := "v1:" + base64.RawURLEncoding.EncodeToString(mod)
		if _, err := s.Open("session:access_token", bad); !errors.Is(err, ErrOpen) {
			t.Fatalf("flipping byte %d: %v", i, err)
		}
	}
	other, _ := NewSealer(bytes.Repeat([]byte{8}, KeySize))
	cases := map[string]func() error{
		"wrong purpose": func() error { _, err := s.Open("session:refresh_token", sealed); return err },
		"wrong key":     func() error { _, err := other.Open("session:access_token", sealed); return err },
		"no version":    func() error { _, err := s.Open("session:access_token", strings.TrimPrefix(sealed, "v1:")); return err },
		"other version": func() error { _, err := s.Open("session:access_token", "v2:"+sealed[3:]); return err },
		"truncated":     func() error { _, err := s.Open("session:access_token", sealed[:20]); return err },
		"empty":         func() error { _, err := s.Open("session:access_token", ""); return err },
		"bad base64":    func() error { _, err := s.Open("session:access_token", "v1:!!!"); return err },
		"padded":        func() error { _, err := s.Open("session:access_token", sealed+"="); return err },
	}
	for name, fn := range cases {
		if err := fn(); !errors.Is(err, ErrOpen) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := NewSealer(make([]byte, 16)); err == nil {
		t.Fatal("accepted a 16-byte key")
	}
}

func TestParseKey(t *testing.T) {
	key := bytes.Repeat([]byte{0xfb}, 32)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		got, err := ParseKey(" " + enc.EncodeToString(key) + "\n")
		if err != nil || !bytes.Equal(got, key) {
			t.Fatalf("%v: %x %v", enc, got, err)
		}
	}
	for _, bad := range []string{"", "not base64 at all!", base64.StdEncoding.EncodeToString(make([]byte, 31)),
		base64.StdEncoding.EncodeToString(make([]byte, 33))} {
		if _, err := ParseKey(bad); err == nil || !strings.Contains(err.Error(), "32 bytes") {
			t.Errorf("ParseKey(%q): %v", bad, err)
		}
	}
}

func TestLoadOrCreateKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "token-encryption.key")
	key, created, err := LoadOrCreateKey(path)
	if err != nil || !created || len(key) != KeySize {
		t.Fatalf("create: %x %v %v", key, created, err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", st.Mode(), err)
	}
	again, created, err := LoadOrCreateKey(path)
	if err != nil || created || !bytes.Equal(again, key) {
		t.Fatalf("reload: %v %v", created, err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "sub", ".key-*"))
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}

	bad := filepath.Join(dir, "bad.key")
	if err := os.WriteFile(bad, []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateKey(bad); err == nil {
		t.Fatal("accepted a malformed key file")
	}
}

func TestLoadOrCreateKeyRace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k")
	const n = 16
	keys := make([][]byte, n)
	var createdCount int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, created, err := LoadOrCreateKey(path)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			keys[i] = k
			if created {
				createdCount++
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, k := range keys {
		if !bytes.Equal(k, keys[0]) {
			t.Fatal("racing creators got different keys")
		}
	}
	if createdCount != 1 {
		t.Fatalf("%d creators reported creating the key", createdCount)
	}
}

// sealedFixture is "plaintext" sealed for "purpose" with testSealer's key.
// It is fixed so that every fuzzing process knows the one valid input.
const sealedFixture = "v1:OofsmjJ8IDggCU-lBEyBrrqKy2wUyNnEL_WkU1TO8P1d5vJVuw"

func FuzzOpenSealed(f *testing.F) {
	s := testSealer(f)
	valid := sealedFixture
	if got, err := s.OpenString("purpose", valid); err != nil || got != "plaintext" {
		f.Fatalf("fixture: %q %v", got, err)
	}
	f.Add(valid)
	f.Add("v1:")
	f.Add("v1:AAAA")
	f.Add(valid[:len(valid)-1])
	f.Add("")
	f.Fuzz(func(t *testing.T, in string) {
		out, err := s.Open("purpose", in)
		if err == nil && (in != valid || string(out) != "plaintext") {
			t.Fatalf("opened a forged value %q", in)
		}
		if err != nil && !errors.Is(err, ErrOpen) {
			t.Fatalf("unexpected error type: %v", err)
		}
	})
}

// TestDerive: derived bytes depend on the key and the purpose only, and
// are not the key.
func TestDerive(t *testing.T) {
	s := testSealer(t)
	again := testSealer(t)
	other, err := NewSealer(bytes.Repeat([]byte{8}, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	a := s.Derive("claim")
	if len(a) != 32 || !bytes.Equal(a, again.Derive("claim")) {
		t.Fatalf("same key and purpose: %x, %x", a, again.Derive("claim"))
	}
	for name, b := range map[string][]byte{
		"another purpose": s.Derive("claim2"),
		"another key":     other.Derive("claim"),
		"the key":         bytes.Repeat([]byte{7}, KeySize),
	} {
		if bytes.Equal(a, b) {
			t.Errorf("%s gives the same bytes", name)
		}
	}
}
