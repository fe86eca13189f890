package serviceid

import (
	"context"
	"errors"
	"regexp"
	"strings"

	"github.com/bluesky-social/indigo/atproto/atcrypto"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/storage"
)

// The key types (curves) of verification methods.
const (
	KeyP256      = "p256"
	KeySecp256k1 = "secp256k1"
)

// fragmentSyntax is a fragment without its "#": a letter, then up to 63
// letters, digits, _ and -.
var fragmentSyntax = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,63}$`)

// ParseFragment accepts "#atproto" or "atproto" and returns "atproto".
func ParseFragment(raw string) (string, error) {
	f := strings.TrimPrefix(raw, "#")
	if raw == "" {
		return "", fail.New(fail.Invalid, "fragment_id is required")
	}
	if !fragmentSyntax.MatchString(f) {
		return "", fail.New(fail.Invalid, "invalid fragment_id: use # then a letter and up to 63 letters, digits, _ and -")
	}
	return f, nil
}

// NewMethod is a verification method to add: either PublicKeyMultibase
// (a key held elsewhere) or Generate with KeyType (the instance makes the
// key and keeps the private half sealed).
type NewMethod struct {
	FragmentID         string
	PublicKeyMultibase string
	Generate           bool
	KeyType            string
}

var errNoSealer = fail.New(fail.Unavailable, "token encryption is not configured")

// SealPurpose binds a sealed private key to its fragment.
func SealPurpose(fragment string) string { return "verification-method:" + fragment }

// Methods lists the verification methods by fragment.
func (s *Service) Methods(ctx context.Context) ([]storage.VerificationMethod, error) {
	return s.opt.Store.ListVerificationMethods(ctx)
}

// AddMethod adds a verification method on behalf of actor.
func (s *Service) AddMethod(ctx context.Context, actor string, n NewMethod) (storage.VerificationMethod, error) {
	fragment, err := ParseFragment(n.FragmentID)
	if err != nil {
		return storage.VerificationMethod{}, err
	}
	m := storage.VerificationMethod{Fragment: fragment, CreatedAt: s.opt.Now()}
	switch {
	case n.Generate && n.PublicKeyMultibase != "":
		return m, fail.New(fail.Invalid, "give either public_key_multibase or generate, not both")
	case n.Generate:
		if err := s.generate(&m, n.KeyType); err != nil {
			return m, err
		}
	case n.PublicKeyMultibase != "":
		if m.KeyType, err = keyType(n.PublicKeyMultibase); err != nil {
			return m, err
		}
		if n.KeyType != "" && n.KeyType != m.KeyType {
			return m, fail.Invalidf("key_type %q does not match the key, a %s key", n.KeyType, m.KeyType)
		}
		m.PublicKeyMultibase = n.PublicKeyMultibase
	default:
		return m, fail.New(fail.Invalid, "public_key_multibase or generate is required")
	}
	if err := s.fragmentFree(ctx, fragment); err != nil {
		return m, err
	}
	if err := s.opt.Store.CreateVerificationMethod(ctx, m); errors.Is(err, storage.ErrConflict) {
		return m, fail.New(fail.Conflict, "verification method already exists")
	} else if err != nil {
		return m, err
	}
	s.opt.Events.Record(ctx, eventlog.Entry{Type: "identity.verification_method_added", ActorDID: actor, Subject: "#" + fragment,
		Detail: map[string]any{"key_type": m.KeyType, "generated": m.SealedPrivateKey != ""}})
	return m, nil
}

// generate makes a key of keyType and seals its private half into m.
func (s *Service) generate(m *storage.VerificationMethod, keyType string) error {
	var priv atcrypto.PrivateKeyExportable
	var err error
	switch keyType {
	case KeyP256:
		priv, err = atcrypto.GeneratePrivateKeyP256()
	case KeySecp256k1:
		priv, err = atcrypto.GeneratePrivateKeyK256()
	case "":
		return fail.New(fail.Invalid, "key_type is required to generate a key: p256 or secp256k1")
	default:
		return fail.New(fail.Invalid, "unsupported key_type: use p256 or secp256k1")
	}
	if err != nil {
		return err
	}
	if s.opt.Sealer == nil {
		return errNoSealer
	}
	pub, err := priv.PublicKey()
	if err != nil {
		return err
	}
	if m.SealedPrivateKey, err = s.opt.Sealer.Seal(SealPurpose(m.Fragment), priv.Bytes()); err != nil {
		return err
	}
	m.KeyType, m.PublicKeyMultibase = keyType, pub.Multibase()
	return nil
}

// keyType parses a multikey public key and names its curve.
func keyType(multibase string) (string, error) {
	pub, err := atcrypto.ParsePublicMultibase(multibase)
	if err != nil {
		return "", fail.New(fail.Invalid, "invalid public_key_multibase: a multikey P-256 or secp256k1 public key is expected")
	}
	switch pub.(type) {
	case *atcrypto.PublicKeyP256:
		return KeyP256, nil
	case *atcrypto.PublicKeyK256:
		return KeySecp256k1, nil
	}
	return "", fail.New(fail.Invalid, "unsupported key curve: use P-256 or secp256k1")
}

// DeleteMethod removes a verification method on behalf of actor.
func (s *Service) DeleteMethod(ctx context.Context, actor, fragmentID string) error {
	fragment, err := ParseFragment(fragmentID)
	if err != nil {
		return err
	}
	if err := s.opt.Store.DeleteVerificationMethod(ctx, fragment); errors.Is(err, storage.ErrNotFound) {
		return fail.New(fail.NotFound, "verification method not found")
	} else if err != nil {
		return err
	}
	s.opt.Events.Record(ctx, eventlog.Entry{Type: "identity.verification_method_deleted", ActorDID: actor, Subject: "#" + fragment})
	return nil
}

// fragmentFree refuses a fragment a service entry has: a DID document's
// ids must be unique.
func (s *Service) fragmentFree(ctx context.Context, fragment string) error {
	entries, err := s.opt.Store.ListServiceEntries(ctx)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Fragment == fragment {
			return fail.New(fail.Invalid, "invalid fragment_id: a service entry has it (DID document ids must be unique)")
		}
	}
	return nil
}
