// Package testproc holds what tests that run reference servers as child
// processes share: requiring what provisions them, finding the
// repository's root, and keeping the tail of a process's output for
// failure messages.
package testproc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// RequireEnv returns the value of the environment variable env, which
// points at what, provisioned by script (for example scripts/lib/relay.sh,
// run by scripts/test). When env is unset the test is skipped, and fails
// under CI=true: there a skipped test would hide a defect.
func RequireEnv(t testing.TB, env, what, script string) string {
	t.Helper()
	v := os.Getenv(env)
	if v != "" {
		return v
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not set: %s is required in CI (see %s)", env, what, script)
	}
	t.Skipf("%s not set; skipping the test of %s (scripts/test provisions it)", env, what)
	return ""
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
