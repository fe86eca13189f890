// Package testproc holds what tests that run reference servers as child
// processes share: requiring what provisions them, finding the
// repository's root, and keeping the tail of a process's output for
// failure messages.
package testproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// PendingSuffix names the companion of a provisioning variable that a
// test run sets while the provisioning is still under way: env+PendingSuffix
// is the path of a status file the installer writes once done, "ok VALUE"
// (VALUE is env's value) or "failed". scripts/test starts `go test` that
// way while the reference PDS installs, and the tests that need it wait.
const PendingSuffix = "_PENDING"

// ProvisionWait bounds how long RequireEnv waits for a pending provisioning.
const ProvisionWait = 20 * time.Minute

// RequireEnv returns the value of the environment variable env, which
// points at what, provisioned by script (for example scripts/lib/relay.sh,
// run by scripts/test). While the provisioning is pending (see
// PendingSuffix) it waits for it. When env is unset, or the provisioning
// failed, the test is skipped, and fails under CI=true: there a skipped
// test would hide a defect.
func RequireEnv(t testing.TB, env, what, script string) string {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		if status := os.Getenv(env + PendingSuffix); status != "" {
			var err error
			if v, err = waitProvisioned(t.Context(), status); err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatalf("%s: %v (see %s)", what, err, script)
				}
				t.Skipf("SKIPPED: %s: %v", what, err)
			}
		}
	}
	if v != "" {
		return v
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not set: %s is required in CI (see %s)", env, what, script)
	}
	t.Skipf("%s not set; skipping the test of %s (scripts/test provisions it)", env, what)
	return ""
}

// waitProvisioned polls the status file at path until it says "ok VALUE"
// (it returns VALUE) or "failed", for ProvisionWait at most.
func waitProvisioned(ctx context.Context, path string) (string, error) {
	deadline := time.Now().Add(ProvisionWait)
	for {
		b, err := os.ReadFile(path)
		switch line := strings.TrimSpace(string(b)); {
		case err == nil && strings.HasPrefix(line, "ok "):
			return strings.TrimPrefix(line, "ok "), nil
		case err == nil && line != "":
			return "", fmt.Errorf("the provisioning failed (%s)", line)
		case err != nil && !errors.Is(err, os.ErrNotExist):
			return "", fmt.Errorf("the provisioning's status: %w", err)
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("still provisioning after %v", ProvisionWait)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// RepoRoot returns the nearest directory above the working directory that
// holds go.mod; marker, a path relative to it, must exist there too (the
// script the caller is about to run).
func RepoRoot(marker string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, marker)); err != nil {
				return "", fmt.Errorf("%s has go.mod but no %s", dir, marker)
			}
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// TailBuffer keeps the last Max bytes written to it; it is safe for
// concurrent use.
type TailBuffer struct {
	Max int
	mu  sync.Mutex
	buf []byte
}

// Write keeps the tail of p.
func (b *TailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.Max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

// String is the output kept so far, indented so that it stands out in
// test logs.
func (b *TailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := strings.TrimRight(string(b.buf), "\n")
	if s == "" {
		return "    (none)"
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
