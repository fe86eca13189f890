// Package plugins is the plugin service: manifests fetched and parsed,
// modules installed pinned by hash and loaded into the WASM runtime,
// secrets sealed at rest, the official registry index, and plugins read
// from files at start. The admin API and scripts reach plugins through a
// Manager.
package plugins

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/plugins/wasm"
)

// Limits on what is fetched.
const (
	maxManifestSize = 64 << 10
	maxWASMSize     = 32 << 20
)

// Auth types a manifest may declare.
const (
	AuthNone   = "none"
	AuthOAuth2 = "oauth2"
)

// SecretSpec is a secret a plugin needs the operator to set.
type SecretSpec struct {
	Key         string `json:"key"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

// Manifest describes a plugin (docs/plugins.md).
type Manifest struct {
	ID              string          `json:"id"`
	Name            string          `json:"name"`
	Version         string          `json:"version"`
	APIVersion      int             `json:"api_version"`
	Description     string          `json:"description"`
	IconURL         string          `json:"icon_url"`
	AuthType        string          `json:"auth_type"`
	RequiredSecrets []SecretSpec    `json:"required_secrets"`
	WASM            string          `json:"wasm"`
	AllowedHosts    []string        `json:"allowed_hosts"`
	ConfigSchema    json.RawMessage `json:"config_schema,omitempty"`
	Config          json.RawMessage `json:"config,omitempty"`
}

var (
	idPattern        = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)
	secretKeyPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,127}$`)
	hostPattern      = regexp.MustCompile(`^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$`)
)

// ParseManifest decodes and checks a manifest; every message names the
// field at fault.
func ParseManifest(b []byte) (Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("the manifest is not a JSON object of the expected shape: %w", err)
	}
	if dec.More() {
		return m, errors.New("the manifest has data after its JSON object")
	}
	switch {
	case !idPattern.MatchString(m.ID):
		return m, fmt.Errorf("id %q must be 1 to 64 lower-case letters, digits and -, starting with a letter or digit", m.ID)
	case strings.TrimSpace(m.Name) == "":
		return m, errors.New("name is required")
	case strings.TrimSpace(m.Version) == "":
		return m, errors.New("version is required")
	case m.APIVersion != wasm.APIVersion:
		return m, fmt.Errorf("api_version %d is not supported (this instance implements %d)", m.APIVersion, wasm.APIVersion)
	case m.WASM == "":
		return m, errors.New("wasm (the module's path relative to the manifest) is required")
	}
	if m.AuthType == "" {
		m.AuthType = AuthNone
	}
	if m.AuthType != AuthNone && m.AuthType != AuthOAuth2 {
		return m, fmt.Errorf("auth_type %q is not one of none, oauth2", m.AuthType)
	}
	seen := map[string]bool{}
	for i, s := range m.RequiredSecrets {
		if !secretKeyPattern.MatchString(s.Key) {
			return m, fmt.Errorf("required_secrets[%d].key %q is not a valid key", i, s.Key)
		}
		if seen[s.Key] {
			return m, fmt.Errorf("required_secrets[%d].key %q is repeated", i, s.Key)
		}
		seen[s.Key] = true
	}
	if m.RequiredSecrets == nil {
		m.RequiredSecrets = []SecretSpec{}
	}
	for i, h := range m.AllowedHosts {
		if !hostPattern.MatchString(h) {
			return m, fmt.Errorf("allowed_hosts[%d] %q is not a hostname or *.domain", i, h)
		}
	}
	if len(m.Config) > 0 && !isObject(m.Config) {
		return m, errors.New("config must be a JSON object")
	}
	if len(m.ConfigSchema) > 0 && !isObject(m.ConfigSchema) {
		return m, errors.New("config_schema must be a JSON object")
	}
	return m, nil
}

func isObject(raw json.RawMessage) bool {
	var v map[string]json.RawMessage
	return json.Unmarshal(raw, &v) == nil && v != nil
}

// fetched is a manifest with its module, as fetched.
type fetched struct {
	Manifest    Manifest
	ManifestRaw []byte
	ManifestURL string
	WASMURL     string
	WASM        []byte
	SHA256      string
}

// resolveWASM returns the module URL: the manifest's wasm relative to the
// manifest URL.
func resolveWASM(manifestURL, rel string) (string, error) {
	base, err := url.Parse(manifestURL)
	if err != nil {
		return "", err
	}
	ref, err := url.Parse(rel)
	if err != nil {
		return "", fmt.Errorf("wasm %q is not a URL reference: %w", rel, err)
	}
	return base.ResolveReference(ref).String(), nil
}

// fetcher reads manifests and modules over HTTP (the guarded client).
type fetcher struct{ client *http.Client }

func (f fetcher) get(ctx context.Context, rawURL string, max int64) ([]byte, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("%q is not an absolute http(s) URL", rawURL)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, err
	}
	res, err := f.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", rawURL, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching %s: the server answered %d", rawURL, res.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rawURL, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is over the %d-byte limit", rawURL, max)
	}
	return b, nil
}

// manifest fetches and parses the manifest at rawURL; failures are
// Invalid errors.
func (f fetcher) manifest(ctx context.Context, rawURL string) (fetched, error) {
	raw, err := f.get(ctx, rawURL, maxManifestSize)
	if err != nil {
		return fetched{}, fail.Wrap(fail.Invalid, "the manifest cannot be fetched: "+err.Error(), err)
	}
	m, err := ParseManifest(raw)
	if err != nil {
		return fetched{}, fail.Wrap(fail.Invalid, "the manifest is invalid: "+err.Error(), err)
	}
	wasmURL, err := resolveWASM(rawURL, m.WASM)
	if err != nil {
		return fetched{}, fail.Wrap(fail.Invalid, "the manifest is invalid: "+err.Error(), err)
	}
	return fetched{Manifest: m, ManifestRaw: raw, ManifestURL: rawURL, WASMURL: wasmURL}, nil
}

// all fetches the manifest and its module, checking the module against
// pin (hex SHA-256) when given.
func (f fetcher) all(ctx context.Context, rawURL, pin string) (fetched, error) {
	out, err := f.manifest(ctx, rawURL)
	if err != nil {
		return out, err
	}
	if out.WASM, err = f.get(ctx, out.WASMURL, maxWASMSize); err != nil {
		return out, fail.Wrap(fail.Invalid, "the module cannot be fetched: "+err.Error(), err)
	}
	sum := sha256.Sum256(out.WASM)
	out.SHA256 = hex.EncodeToString(sum[:])
	if pin != "" && !strings.EqualFold(pin, out.SHA256) {
		return out, fail.Newf(fail.Invalid, "the module's sha256 is %s, not the pinned %s", out.SHA256, strings.ToLower(pin))
	}
	return out, nil
}
