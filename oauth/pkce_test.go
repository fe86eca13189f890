package oauth

import (
	"errors"
	"strings"
	"testing"
)

func TestPKCE(t *testing.T) {
	// RFC 7636, appendix B.
	const verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
	const challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
	if got := PKCEChallenge(verifier); got != challenge {
		t.Fatalf("challenge %q", got)
	}
	if err := VerifyPKCE(verifier, challenge); err != nil {
		t.Fatal(err)
	}
	if !ValidPKCEChallenge(challenge) || ValidPKCEChallenge(challenge+"A") || ValidPKCEChallenge("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw+cM") {
		t.Fatal("ValidPKCEChallenge")
	}
	long := strings.Repeat("a", 128)
	if err := VerifyPKCE(long, PKCEChallenge(long)); err != nil {
		t.Fatalf("128 characters: %v", err)
	}
	for name, v := range map[string]string{
		"42 characters":  strings.Repeat("a", 42),
		"129 characters": strings.Repeat("a", 129),
		"reserved char":  strings.Repeat("a", 42) + "/",
		"space":          strings.Repeat("a", 42) + " ",
		"non-ASCII":      strings.Repeat("a", 42) + "é",
	} {
		if err := VerifyPKCE(v, PKCEChallenge(v)); !errors.Is(err, ErrPKCE) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := VerifyPKCE(verifier, PKCEChallenge(verifier+"x")); !errors.Is(err, ErrPKCE) {
		t.Fatalf("mismatch: %v", err)
	}
	if err := VerifyPKCE(verifier, verifier); !errors.Is(err, ErrPKCE) {
		t.Fatalf("plain method accepted: %v", err)
	}
}
