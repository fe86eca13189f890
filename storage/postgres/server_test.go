package postgres_test

import (
	"context"
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/lib/pq"

	"github.com/lexview/lexview/storage/postgres"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestCheckVersion: servers older than PostgreSQL 17 are refused with an
// error naming the version found, the one required and where to get it.
func TestCheckVersion(t *testing.T) {
	for _, ok := range []struct {
		num     int
		version string
	}{{170000, "17.0"}, {170005, "17.5 (Debian 17.5-1)"}, {180001, "18.1"}} {
		if err := postgres.CheckVersion(ok.num, ok.version); err != nil {
			t.Errorf("%s refused: %v", ok.version, err)
		}
	}
	for _, old := range []struct {
		num     int
		version string
	}{{160009, "16.9"}, {90624, "9.6.24"}, {169999, "16.99"}} {
		err := postgres.CheckVersion(old.num, old.version)
		if !errors.Is(err, postgres.ErrUnsupportedServer) || !strings.Contains(err.Error(), "PostgreSQL "+old.version) ||
			!strings.Contains(err.Error(), "PostgreSQL 17 or newer") || !strings.Contains(err.Error(), "apt.postgresql.org") {
			t.Errorf("%s: %v", old.version, err)
		}
	}
}

// TestOpenChecksTheServer: Open reads the version of a real PostgreSQL 17
// server and accepts it.
func TestOpenChecksTheServer(t *testing.T) {
	s, err := postgres.Open(context.Background(), storagetest.PostgresURL(t), postgres.Options{MaxConns: 2})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer s.Close()
	info, err := s.DBInfo(context.Background())
	if err != nil || (!strings.HasPrefix(info.Version, "17") && !strings.HasPrefix(info.Version, "18")) {
		t.Fatalf("server version %q, %v", info.Version, err)
	}
}

// TestOpenExplainsMissingTLS: lib/pq requires TLS unless the URL says
// otherwise; against a server without TLS (the test server has none) the
// error says to add sslmode=disable.
func TestOpenExplainsMissingTLS(t *testing.T) {
	u, err := url.Parse(storagetest.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Del("sslmode") // lib/pq's default: require
	u.RawQuery = q.Encode()
	s, err := postgres.Open(context.Background(), u.String(), postgres.Options{})
	if err == nil {
		s.Close()
		if os.Getenv("CI") == "true" {
			t.Fatal("the test server offers TLS; this test needs one without")
		}
		t.Skip("the test server offers TLS; this test needs one without")
	}
	if !errors.Is(err, pq.ErrSSLNotSupported) || !strings.Contains(err.Error(), "add sslmode=disable to DATABASE_URL") {
		t.Fatalf("open without sslmode: %v", err)
	}
}
