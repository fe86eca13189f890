package benchkit

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// RunBackends runs run for each backend in turn ("sqlite" or "postgres"),
// with a temporary directory (named after the tool, removed afterwards),
// after creating profDir when one is given. It stops at the first
// backend that fails and returns its error.
func RunBackends(ctx context.Context, tool string, backends []string, profDir string,
	run func(ctx context.Context, backend, dir string) error) error {
	for _, b := range backends {
		if b != "sqlite" && b != "postgres" {
			return fmt.Errorf("unknown backend %q", b)
		}
	}
	dir, err := os.MkdirTemp("", "lexview-"+tool+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if profDir != "" {
		if err := os.MkdirAll(profDir, 0o755); err != nil {
			return err
		}
	}
	for _, b := range backends {
		if err := run(ctx, b, dir); err != nil {
			return fmt.Errorf("%s: %w", b, err)
		}
	}
	return nil
}

// AppendCursor appends a baseline's page cursor, base64url("MICROS URI"):
// the position of the page's last row.
func AppendCursor(buf []byte, micros int64, uri []byte) []byte {
	var raw [256]byte
	p := strconv.AppendInt(raw[:0], micros, 10)
	p = append(p, ' ')
	p = append(p, uri...)
	return base64.RawURLEncoding.AppendEncode(buf, p)
}

// DecodeCursor reads a cursor AppendCursor made.
func DecodeCursor(c string) (micros int64, uri string, ok bool) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, "", false
	}
	m, uri, ok := strings.Cut(string(raw), " ")
	n, err := strconv.ParseInt(m, 10, 64)
	return n, uri, ok && err == nil && strings.HasPrefix(uri, "at://")
}
