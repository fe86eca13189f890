// Package oauth holds the cryptography of Lexview's OAuth surface: DPoP
// proofs (verifying the ones apps send, making the ones Lexview sends to
// PDSes), client assertions and key sets for confidential clients, PKCE
// checks, and sealing of secrets at rest with AES-256-GCM. It is a pure
// library: it neither stores nor serves anything.
package oauth

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// KeySize is the length in bytes of a sealing key (AES-256).
const KeySize = 32

// sealVersion prefixes every sealed value; a future key or algorithm change
// gets a new version so that old values remain readable.
const sealVersion = "v1:"

// sealADPrefix starts the additional data of every sealed value, so that
// a value sealed by Lexview for one purpose never opens for another.
const sealADPrefix = "lexview/seal/v1\x00"

// ErrOpen is returned when a sealed value cannot be opened: it is
// malformed, was tampered with, was sealed with another key, or was sealed
// for another purpose. The causes are deliberately indistinguishable.
var ErrOpen = errors.New("oauth: sealed value cannot be opened")

// Sealer encrypts secrets for storage with AES-256-GCM. Each value is bound
// to a purpose (for example "session:access_token") through the GCM
// additional data, so a sealed value cannot be moved to another field. A
// Sealer is safe for concurrent use.
type Sealer struct {
	aead   cipher.AEAD
	derive []byte // the subkey Derive uses
}

// deriveLabel makes the subkey of Derive from the sealing key.
const deriveLabel = "lexview/derive/v1"

// NewSealer returns a Sealer for a 32-byte key.
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("oauth: sealing key must be %d bytes, got %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("oauth: sealing key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("oauth: sealing key: %w", err)
	}
	return &Sealer{aead: aead, derive: hmacSHA256(key, deriveLabel)}, nil
}

// Derive returns 32 bytes derived from the sealing key for purpose: the
// same for every Sealer of the same key (across restarts and processes),
// different for every purpose, and revealing nothing about the key or
// another purpose's bytes. It is for a secret that must stay the same
// without being stored, such as a fresh instance's claim token.
func (s *Sealer) Derive(purpose string) []byte {
	return hmacSHA256(s.derive, purpose)
}

func hmacSHA256(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

func additionalData(purpose string) []byte {
	return []byte(sealADPrefix + purpose)
}

// Seal encrypts plaintext for purpose with a fresh random nonce and returns
// "v1:" followed by base64url(nonce || ciphertext || tag). Sealing the same
// plaintext twice gives different outputs.
func (s *Sealer) Seal(purpose string, plaintext []byte) (string, error) {
	ns := s.aead.NonceSize()
	buf := make([]byte, ns, ns+len(plaintext)+s.aead.Overhead())
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("oauth: seal nonce: %w", err)
	}
	buf = s.aead.Seal(buf, buf[:ns], plaintext, additionalData(purpose))
	return sealVersion + base64.RawURLEncoding.EncodeToString(buf), nil
}

// SealString is Seal for a string.
func (s *Sealer) SealString(purpose, plaintext string) (string, error) {
	return s.Seal(purpose, []byte(plaintext))
}

// Open decrypts a value made by Seal for the same purpose. It returns
// ErrOpen for anything else.
func (s *Sealer) Open(purpose, sealed string) ([]byte, error) {
	body, ok := strings.CutPrefix(sealed, sealVersion)
	if !ok {
		return nil, fmt.Errorf("%w: unknown format", ErrOpen)
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(body)
	// The decoder skips line breaks: insist on the one canonical encoding.
	if err != nil || base64.RawURLEncoding.EncodedLen(len(raw)) != len(body) {
		return nil, fmt.Errorf("%w: bad encoding", ErrOpen)
	}
	ns := s.aead.NonceSize()
	if len(raw) < ns+s.aead.Overhead() {
		return nil, fmt.Errorf("%w: too short", ErrOpen)
	}
	out, err := s.aead.Open(nil, raw[:ns], raw[ns:], additionalData(purpose))
	if err != nil {
		return nil, fmt.Errorf("%w: authentication failed", ErrOpen)
	}
	return out, nil
}

// OpenString is Open returning a string.
func (s *Sealer) OpenString(purpose, sealed string) (string, error) {
	b, err := s.Open(purpose, sealed)
	return string(b), err
}

// ParseKey decodes a base64 sealing key (standard or URL alphabet, padded
// or not) that must hold exactly 32 bytes.
func ParseKey(b64 string) ([]byte, error) {
	s := strings.TrimSpace(b64)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		key, err := enc.DecodeString(s)
		if err != nil {
			continue
		}
		if len(key) != KeySize {
			return nil, fmt.Errorf("oauth: key must be base64 of exactly %d bytes, got %d bytes", KeySize, len(key))
		}
		return key, nil
	}
	return nil, fmt.Errorf("oauth: key must be base64 of exactly %d bytes: not valid base64", KeySize)
}

// LoadOrCreateKey reads the base64 sealing key kept in the file at path.
// When the file does not exist, it creates one holding a new random key,
// readable by the owner only (0600), and reports created. Creation is
// atomic: the key is written to a temporary file and then linked into
// place, so a concurrent caller either sees no file or the complete one,
// and two racing creators end up sharing one key.
func LoadOrCreateKey(path string) (key []byte, created bool, err error) {
	if key, err := readKeyFile(path); err == nil || !errors.Is(err, os.ErrNotExist) {
		return key, false, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, fmt.Errorf("oauth: key directory: %w", err)
	}
	key = make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, false, fmt.Errorf("oauth: generate key: %w", err)
	}
	encoded := []byte(base64.StdEncoding.EncodeToString(key) + "\n")

	tmp, err := os.CreateTemp(dir, ".key-*.tmp") // CreateTemp uses mode 0600
	if err != nil {
		return nil, false, fmt.Errorf("oauth: create key file: %w", err)
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName)
	if err := writeAndSync(tmp, encoded); err != nil {
		return nil, false, fmt.Errorf("oauth: write key file: %w", err)
	}
	if err := os.Link(tmpName, path); err != nil {
		if errors.Is(err, os.ErrExist) {
			// Another process created it first: use its key.
			key, err := readKeyFile(path)
			return key, false, err
		}
		// Hard links are unsupported here: fall back to an exclusive create.
		if err := createExclusive(path, encoded); err != nil {
			if errors.Is(err, os.ErrExist) {
				key, err := readKeyFile(path)
				return key, false, err
			}
			return nil, false, fmt.Errorf("oauth: create key file: %w", err)
		}
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return key, true, nil
}

func readKeyFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("oauth: read key file: %w", err)
	}
	key, err := ParseKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("oauth: key file %s: %w", path, err)
	}
	return key, nil
}

func writeAndSync(f *os.File, data []byte) error {
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func createExclusive(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := writeAndSync(f, data); err != nil {
		os.Remove(path)
		return err
	}
	return nil
}
