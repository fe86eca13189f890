// Package plugintest builds plugin modules for tests: a Go package
// compiled with GOOS=wasip1 GOARCH=wasm -buildmode=c-shared, cached by the
// hash of its sources (and the pdk's) in the temporary directory so that
// test runs after the first skip the link.
package plugintest

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
)

var mu sync.Mutex

// Build compiles the plugin package at dir (relative to the module root,
// for example "examples/plugins/wordfilter") and returns the WASM.
func Build(t testing.TB, dir string) []byte {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	root := moduleRoot(t)
	h := sha256.New()
	h.Write([]byte(runtime.Version()))
	for _, d := range []string{dir, "examples/plugins/pdk"} {
		hashDir(t, h, filepath.Join(root, d))
	}
	sum := hex.EncodeToString(h.Sum(nil))[:24]
	cacheDir := filepath.Join(os.TempDir(), "lexview-plugin-cache")
	out := filepath.Join(cacheDir, strings.ReplaceAll(dir, "/", "_")+"-"+sum+".wasm")
	if b, err := os.ReadFile(out); err == nil {
		return b
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := out + ".tmp"
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-o", tmp, "./"+dir)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", dir, err, b)
	}
	if err := os.Rename(tmp, out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hashDir(t testing.TB, h interface{ Write([]byte) (int, error) }, dir string) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".go") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		h.Write([]byte(f))
		h.Write(b)
	}
}

// moduleRoot finds the directory of go.mod above the working directory.
func moduleRoot(t testing.TB) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found")
		}
		dir = parent
	}
}
