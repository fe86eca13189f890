package benchkit

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	_ "github.com/mattn/go-sqlite3" // the "sqlite3" driver of OpenSQL

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/storage"
)

// ClientKey is the API client key the load generator sends
// (X-Client-Key); RegisterClient stores its client.
const ClientKey = "hvc_bench"

// RegisterClient stores the API client whose key the load generator
// sends, with a rate limit high enough never to refuse a request.
func RegisterClient(ctx context.Context, s storage.Store) error {
	if _, err := s.GetAPIClientByKey(ctx, ClientKey); err == nil {
		return nil
	}
	capacity, refill := 1<<30, 1e9
	now := time.Now()
	sum := sha256.Sum256([]byte("hvs_bench"))
	err := s.CreateAPIClient(ctx, storage.APIClient{
		ID: storage.NewID(), Key: ClientKey, SecretHash: hex.EncodeToString(sum[:]), Name: "bench",
		ClientIDURL: "https://bench.invalid/client-metadata.json", ClientURI: "https://bench.invalid",
		Scopes: "atproto", Type: storage.ClientConfidential, IsActive: true, CreatedBy: "did:plc:benchquery",
		RateLimitCapacity: &capacity, RateLimitRefillRate: &refill, CreatedAt: now, UpdatedAt: now,
	})
	if err != nil {
		return fmt.Errorf("register API client %s: %w", ClientKey, err)
	}
	return nil
}

// benchTokenKey seals secrets at rest in the benchmark's databases (which
// hold none but the API client's hashed secret).
const benchTokenKey = "bGV4dmlldy1iZW5jaHF1ZXJ5LXRva2VuLWtleS0zMiE="

// AppConfig is the App configuration of the benchmarks: no live source, a
// quiet logger.
func AppConfig(s storage.Store) appview.Config {
	return appview.Config{
		Store:    s,
		Ingest:   appview.IngestConfig{JetstreamURL: "off"},
		Security: appview.SecurityConfig{SessionSecret: randomSecret(), TokenEncryptionKey: benchTokenKey},
		Logger:   QuietLogger(),
	}
}

func randomSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// QuietLogger drops everything below errors (start-up warnings, request
// logs).
func QuietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}

// NewLexviewHandler serves Lexview itself over a prepared database (a
// HandlerFactory): the App's handler, not started (no ingestion, no
// leader's work).
func NewLexviewHandler(ctx context.Context, dbURL string) (http.Handler, func(), error) {
	s, err := appview.OpenStore(ctx, dbURL)
	if err != nil {
		return nil, nil, err
	}
	app, err := appview.New(AppConfig(s))
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return app, func() { s.Close() }, nil
}

// Settle leaves a seeded database in the state both servers start from:
// checkpointed (SQLite) or vacuumed and analysed (PostgreSQL).
func Settle(ctx context.Context, s storage.Store, dbURL string) error {
	w, ok := s.(interface{ Writer() *sql.DB })
	if !ok {
		return nil
	}
	stmt := "VACUUM ANALYZE"
	if strings.HasPrefix(dbURL, "sqlite://") {
		stmt = "PRAGMA wal_checkpoint(TRUNCATE)"
	}
	if _, err := w.Writer().ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("%s: %w", stmt, err)
	}
	return nil
}
