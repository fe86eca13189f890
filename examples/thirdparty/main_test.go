package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDemoRuns builds the example and runs it with -demo, as its users
// would: every step must be printed, the write read back and the device
// signed out.
func TestDemoRuns(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "thirdparty")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "-demo", "-text", "written by the test")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"1. POST /oauth/dpop-keys: provision hvp_",
		"2. OAuth: tokens issued for did:plc:",
		"3. POST /oauth/sessions: session ",
		"4a. POST /xrpc/com.example.createNote: wrote at://did:plc:",
		`4b. GET /xrpc/com.example.listNotes?uri=...: read back "written by the test"`,
		"5a. GET /oauth/sessions/did:plc:thirdpartydemo000000001/devices: 1 device(s), this one among them",
		"5b. DELETE /oauth/sessions/did:plc:thirdpartydemo000000001: signed out this device",
		"5c. devices left: 0; the device's next write is refused: 401",
		"demo: the PDS stand-in holds 1 record(s)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", out, stderr.String())
	}
}

// TestTwoRuns runs the example as against a real instance (no -demo): the
// first run provisions the key and prints the instructions; after a
// "sign-in" with that key, the second run registers the tokens and
// completes the steps. The demo's servers stand in for the instance and
// the PDS.
func TestTwoRuns(t *testing.T) {
	ctx := context.Background()
	d, err := startDemo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	o := options{lexview: d.LexviewURL + "/", clientKey: d.ClientKey, clientSecret: d.ClientSecret, did: d.DID,
		scopes: demoScopes, procedure: "com.example.createNote", query: "com.example.listNotes",
		text: "two runs", state: filepath.Join(t.TempDir(), "device.json")}

	var out bytes.Buffer
	if err := run(ctx, o, &out); err != nil {
		t.Fatalf("first run: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "2. Now run the atproto OAuth flow") || strings.Contains(out.String(), "3. ") {
		t.Fatalf("first run output:\n%s", out.String())
	}
	if info, err := os.Stat(o.state); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v %v", info, err)
	}

	// The person signs in: the authorization server issues tokens bound to
	// the saved key.
	_, signer, err := loadState(o.state)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := d.SignIn(ctx, d.DID, signer.JKT())
	if err != nil {
		t.Fatal(err)
	}
	o.accessToken, o.refreshToken = tok.AccessToken, tok.RefreshToken
	o.expiresAt, o.pds, o.issuer = tok.ExpiresAt.UTC().Format(time.RFC3339), tok.PDSURL, tok.Issuer

	out.Reset()
	if err := run(ctx, o, &out); err != nil {
		t.Fatalf("second run: %v\n%s", err, out.String())
	}
	for _, want := range []string{"1. loaded the provisioned DPoP key", `read back "two runs"`, "devices left: 0"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("second run output lacks %q:\n%s", want, out.String())
		}
	}
	// The provision was consumed by the second run: a third one fails.
	if err := run(ctx, o, &out); err == nil || !strings.Contains(err.Error(), "400") {
		t.Fatalf("third run with a used provision: %v", err)
	}
}
