package appview

import (
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/lexview/lexview/storage/storagetest"
)

// TestLifecycleDocumented fails when a component of the App (every
// instance's or the leader's) is not named in the lifecycle section of
// docs/embedding.md.
func TestLifecycleDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/embedding.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "### The lifecycle")
	if !ok {
		t.Fatal("docs/embedding.md has no lifecycle section")
	}
	section, _, _ = strings.Cut(section, "\n#")
	section = strings.Join(strings.Fields(section), " ") // names may break across lines
	a, err := New(Config{
		Store:    storagetest.SQLite(t),
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		Security: SecurityConfig{TokenEncryptionKey: "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="},
		Metrics:  MetricsConfig{Addr: "127.0.0.1:0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	parts := append(a.components(), a.leaderComponents()...)
	if len(parts) < 10 {
		t.Fatalf("%d components: the test lists the wrong ones", len(parts))
	}
	for _, p := range parts {
		name := p.name
		if strings.HasPrefix(name, "source ") {
			name = "event sources"
		}
		if !strings.Contains(section, name) {
			t.Errorf("the component %q is not in the lifecycle section of docs/embedding.md", p.name)
		}
	}
}
