package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

var secretPattern = regexp.MustCompile(`^hv_[A-Za-z0-9_-]{43}\n$`)

// bootstrapRun runs `appview admin ...args` and returns the exit code and
// both outputs.
func bootstrapRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(append([]string{"admin"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestAdminBootstrapUsage(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("DATABASE_URL", "sqlite://"+filepath.Join(dir, "u.db"))
	t.Setenv("LOG_LEVEL", "error")
	for _, args := range [][]string{
		{}, {"frobnicate"}, {"bootstrap"}, {"bootstrap", "--did", "not-a-did"},
		{"bootstrap", "--did", "did:plc:abc", "extra"}, {"bootstrap", "--bogus"},
	} {
		code, out, errOut := bootstrapRun(t, args...)
		if code != 2 || out != "" || errOut == "" {
			t.Errorf("admin %v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}

func TestAdminBootstrap(t *testing.T) {
	for _, backend := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "b.db") }},
		{"postgres", func(t *testing.T) string { return storagetest.PostgresURL(t) }},
	} {
		t.Run(backend.name, func(t *testing.T) {
			dbURL := backend.url(t)
			t.Chdir(t.TempDir())
			t.Setenv("DATABASE_URL", dbURL)
			t.Setenv("LOG_LEVEL", "error")
			const did, other = "did:plc:bootstrapsuperuser", "did:web:other.example"

			code, out, errOut := bootstrapRun(t, "bootstrap", "--did", did)
			if code != 0 || !secretPattern.MatchString(out) {
				t.Fatalf("first bootstrap: exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			first := strings.TrimSpace(out)

			store, err := appview.OpenStore(context.Background(), dbURL)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			ctx := context.Background()
			users, err := store.ListAdminUsers(ctx)
			if err != nil || len(users) != 1 || users[0].DID != did || !users[0].IsSuper {
				t.Fatalf("users after bootstrap: %+v %v", users, err)
			}
			all := appview.Permissions()
			if !slices.Equal(users[0].Permissions, all) {
				t.Fatalf("super user permissions: %v", users[0].Permissions)
			}
			key, err := store.GetAdminAPIKeyByHash(ctx, hashKey(first))
			if err != nil || key.UserID != users[0].ID || key.Name != "bootstrap" || key.Prefix != first[:8] ||
				!slices.Equal(key.Permissions, all) {
				t.Fatalf("minted key: %+v %v", key, err)
			}

			// A super user exists: refused, for that DID without the flag and
			// for any other DID with or without it.
			for _, args := range [][]string{
				{"bootstrap", "--did", did},
				{"bootstrap", "--did", other},
				{"bootstrap", "--did", other, "--force-new-key"},
			} {
				code, out, errOut := bootstrapRun(t, args...)
				if code != 1 || out != "" || !strings.Contains(errOut, "super user") {
					t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
				}
			}
			if n, _ := store.CountAdminUsers(ctx); n != 1 {
				t.Fatalf("refused bootstraps added users: %d", n)
			}

			code, out, errOut = bootstrapRun(t, "bootstrap", "--force-new-key", "--did", did)
			if code != 0 || !secretPattern.MatchString(out) || strings.TrimSpace(out) == first {
				t.Fatalf("forced new key: exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			second := strings.TrimSpace(out)
			keys, _ := store.ListAdminAPIKeys(ctx)
			if len(keys) != 2 {
				t.Fatalf("keys after --force-new-key: %d", len(keys))
			}

			// Both keys work on the admin API and carry every permission.
			app, err := appview.New(appview.Config{
				Store:    store,
				Ingest:   appview.IngestConfig{JetstreamURL: "off"},
				Security: appview.SecurityConfig{TokenEncryptionKey: "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="},
				Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
			})
			if err != nil {
				t.Fatal(err)
			}
			defer app.Shutdown(context.Background())
			for _, secret := range []string{first, second} {
				req := httptest.NewRequest("POST", "/admin/users", strings.NewReader(`{"did":"did:web:new.example","template":"full_access"}`))
				req.Header.Set("Authorization", "Bearer "+secret)
				rec := httptest.NewRecorder()
				app.ServeHTTP(rec, req)
				if want := map[string]int{first: http.StatusCreated, second: http.StatusConflict}[secret]; rec.Code != want {
					t.Fatalf("key %s...: %d %s", secret[:8], rec.Code, rec.Body)
				}
			}
			events, _, err := store.ListEvents(ctx, storage.EventFilter{Type: "api_key.created", Limit: 10})
			if err != nil || len(events) != 2 {
				t.Fatalf("api_key.created events: %d %v", len(events), err)
			}
			for _, e := range events {
				if strings.Contains(string(e.Detail), first) || strings.Contains(string(e.Detail), second) {
					t.Fatalf("event detail holds a secret: %s", e.Detail)
				}
			}
		})
	}
}

// hashKey is the stored form of an admin API key: hex SHA-256.
func hashKey(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}
