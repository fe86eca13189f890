package appview

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolveEncryptionKeyConfigured(t *testing.T) {
	t.Parallel()
	want := bytes.Repeat([]byte{0x5a}, 32)
	cfg := Config{Security: SecurityConfig{TokenEncryptionKey: base64.StdEncoding.EncodeToString(want)}}
	for _, dialect := range []string{"sqlite", "postgres"} {
		got, err := resolveEncryptionKey(cfg, dialect, filepath.Join(t.TempDir(), "app.db"))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: %x %v", dialect, got, err)
		}
	}
	for _, bad := range []string{"short", base64.StdEncoding.EncodeToString(make([]byte, 16)), "%%%not-base64%%%"} {
		_, err := resolveEncryptionKey(Config{Security: SecurityConfig{TokenEncryptionKey: bad}}, "postgres", "")
		if err == nil || !strings.Contains(err.Error(), "TOKEN_ENCRYPTION_KEY") || !strings.Contains(err.Error(), "32 bytes") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestResolveEncryptionKeySQLiteFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "app.db")
	var logs bytes.Buffer
	cfg := Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	key, err := resolveEncryptionKey(cfg, "sqlite", dbPath)
	if err != nil || len(key) != 32 {
		t.Fatalf("generate: %x %v", key, err)
	}
	path := filepath.Join(dir, "token-encryption.key")
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st, err)
	}
	if !strings.Contains(logs.String(), "generated a key") || strings.Contains(logs.String(), base64.StdEncoding.EncodeToString(key)) {
		t.Fatalf("log: %s", logs.String())
	}
	logs.Reset()
	again, err := resolveEncryptionKey(cfg, "sqlite", dbPath)
	if err != nil || !bytes.Equal(again, key) || logs.Len() != 0 {
		t.Fatalf("reuse: %v, logged %q", err, logs.String())
	}
	if err := os.WriteFile(path, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := resolveEncryptionKey(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, "sqlite", dbPath); err == nil {
		t.Fatal("accepted a corrupt key file")
	}
}

func TestResolveEncryptionKeyPostgresRequiresKey(t *testing.T) {
	t.Parallel()
	_, err := resolveEncryptionKey(Config{}, "postgres", "")
	if !errors.Is(err, errPostgresNeedsTokenKey) ||
		err.Error() != "TOKEN_ENCRYPTION_KEY is required with PostgreSQL (base64 of 32 random bytes, e.g. `openssl rand -base64 32`)" {
		t.Fatalf("%v", err)
	}
}
