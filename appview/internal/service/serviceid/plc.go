package serviceid

import (
	"context"
	"encoding/hex"
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/bluesky-social/indigo/atproto/atcrypto"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/core/plc"
	"github.com/lexview/lexview/storage"
)

// The settings holding the did_plc identity (reserved, like ModeSetting).
const (
	PLCDIDSetting = "identity.plc.did"
	// PLCRotationKeyPrefix + a DID holds that DID's rotation key (sealed
	// multibase private key): one per DID, so that adopting another DID
	// never overwrites the only copy of a key the instance generated.
	PLCRotationKeyPrefix = "identity.plc.rotation_key."
)

// rotationKeyPurpose binds a sealed rotation key to its use and its DID.
func rotationKeyPurpose(did string) string { return "identity:plc-rotation-key:" + did }

// PLCRequest is what PUT /admin/service-identity carries for did_plc:
// Create makes a new DID (a genesis operation); DID with RotationKey
// adopts an existing one; neither keeps the DID already configured.
type PLCRequest struct {
	Create      bool
	DID         string
	RotationKey string
}

// setPLC configures the did_plc identity from req.
func (s *Service) setPLC(ctx context.Context, actor string, req PLCRequest) error {
	if s.opt.PLC == nil {
		return fail.New(fail.Unavailable, "no PLC directory is configured")
	}
	current, _ := s.setting(ctx, PLCDIDSetting)
	switch {
	case req.Create && (req.DID != "" || req.RotationKey != ""):
		return fail.New(fail.Invalid, "give either create or did and rotation_key, not both")
	case req.Create:
		if current != "" {
			return fail.Invalidf("a did:plc is already configured (%s): adopt another with did and rotation_key", current)
		}
		return s.createPLC(ctx, actor)
	case req.DID != "" || req.RotationKey != "":
		return s.adoptPLC(ctx, actor, req.DID, req.RotationKey)
	case current == "":
		return fail.New(fail.Invalid, "the did_plc mode needs a DID: give create true, or did and rotation_key to adopt one")
	}
	return nil
}

// createPLC generates a rotation key and registers a new DID whose
// document holds the configured verification methods and services.
func (s *Service) createPLC(ctx context.Context, actor string) error {
	key, err := atcrypto.GeneratePrivateKeyK256()
	if err != nil {
		return err
	}
	pub, err := key.PublicKey()
	if err != nil {
		return err
	}
	state, err := s.desiredState(ctx)
	if err != nil {
		return err
	}
	state.RotationKeys = []string{pub.DIDKey()}
	op := state.Next("")
	if err := op.Sign(key); err != nil {
		return err
	}
	did, err := op.DID()
	if err != nil {
		return err
	}
	if err := s.storeRotationKey(ctx, did, key); err != nil {
		return err
	}
	if err := s.opt.PLC.Submit(ctx, did, op); err != nil {
		return plcFailure(err)
	}
	if err := s.opt.Store.PutSetting(ctx, PLCDIDSetting, did); err != nil {
		return err
	}
	s.opt.Events.Record(ctx, eventlog.Entry{Type: "identity.plc_created", ActorDID: actor, Subject: did,
		Detail: map[string]any{"rotation_key": pub.DIDKey()}})
	return nil
}

// adoptPLC takes over an existing DID whose rotation keys include the
// given private key, or the key the instance keeps for that DID (one it
// created or adopted before) when none is given.
func (s *Service) adoptPLC(ctx context.Context, actor, did, rawKey string) error {
	errBoth := fail.New(fail.Invalid, "adopting a did:plc needs both did and rotation_key")
	if did == "" {
		return errBoth
	}
	if d, err := syntax.ParseDID(did); err != nil || d.Method() != "plc" {
		return fail.New(fail.Invalid, "invalid did: a did:plc is expected")
	}
	var key atcrypto.PrivateKeyExportable
	var err error
	if rawKey == "" {
		if key, err = s.rotationKey(ctx, did); err != nil {
			return errBoth
		}
	} else if key, err = parseRotationKey(rawKey); err != nil {
		return err
	}
	pub, err := key.PublicKey()
	if err != nil {
		return err
	}
	state, err := s.opt.PLC.State(ctx, did)
	if errors.Is(err, plc.ErrNotFound) {
		return fail.Invalidf("%s is not registered at the PLC directory", did)
	} else if err != nil {
		return plcFailure(err)
	}
	if !slices.Contains(state.RotationKeys, pub.DIDKey()) {
		return fail.Invalidf("rotation_key is not a rotation key of %s", did)
	}
	if err := s.storeRotationKey(ctx, did, key); err != nil {
		return err
	}
	if err := s.opt.Store.PutSetting(ctx, PLCDIDSetting, did); err != nil {
		return err
	}
	s.opt.Events.Record(ctx, eventlog.Entry{Type: "identity.plc_adopted", ActorDID: actor, Subject: did,
		Detail: map[string]any{"rotation_key": pub.DIDKey()}})
	return nil
}

// parseRotationKey reads a private key given as a multibase string (P-256
// or secp256k1, as goat prints them) or as 64 hex digits (secp256k1, as
// the reference PDS's PDS_PLC_ROTATION_KEY_K256_PRIVATE_KEY_HEX).
func parseRotationKey(raw string) (atcrypto.PrivateKeyExportable, error) {
	raw = strings.TrimSpace(raw)
	if b, err := hex.DecodeString(raw); err == nil && len(b) == 32 {
		if k, err := atcrypto.ParsePrivateBytesK256(b); err == nil {
			return k, nil
		}
	}
	k, err := atcrypto.ParsePrivateMultibase(raw)
	if err != nil {
		return nil, fail.New(fail.Invalid, "invalid rotation_key: a multibase P-256 or secp256k1 private key, or 64 hex digits of a secp256k1 one, is expected")
	}
	return k, nil
}

func (s *Service) storeRotationKey(ctx context.Context, did string, key atcrypto.PrivateKeyExportable) error {
	if s.opt.Sealer == nil {
		return errNoSealer
	}
	sealed, err := s.opt.Sealer.SealString(rotationKeyPurpose(did), key.Multibase())
	if err != nil {
		return err
	}
	return s.opt.Store.PutSetting(ctx, PLCRotationKeyPrefix+did, sealed)
}

// rotationKey opens the stored rotation key of did.
func (s *Service) rotationKey(ctx context.Context, did string) (atcrypto.PrivateKeyExportable, error) {
	sealed, err := s.setting(ctx, PLCRotationKeyPrefix+did)
	if err != nil {
		return nil, err
	}
	if sealed == "" {
		return nil, fail.New(fail.Invalid, "no PLC rotation key is stored")
	}
	if s.opt.Sealer == nil {
		return nil, errNoSealer
	}
	raw, err := s.opt.Sealer.OpenString(rotationKeyPurpose(did), sealed)
	if err != nil {
		return nil, err
	}
	return atcrypto.ParsePrivateMultibase(raw)
}

// RotationKeyDID is the public did:key of did's stored rotation key, ""
// when none is stored.
func (s *Service) RotationKeyDID(ctx context.Context, did string) string {
	key, err := s.rotationKey(ctx, did)
	if err != nil {
		return ""
	}
	pub, err := key.PublicKey()
	if err != nil {
		return ""
	}
	return pub.DIDKey()
}

// errWrongModeForSync is the 400 of sync-plc outside did_plc.
var errWrongModeForSync = fail.New(fail.Invalid, "wrong identity mode for PLC sync: sync-plc needs the did_plc mode and a configured DID")

// SyncPLC makes the DID's PLC state list the configured verification
// methods and services (rotation keys and alsoKnownAs are kept), signed
// with the stored rotation key. It reports whether an operation was
// submitted: none is when the state already matches.
func (s *Service) SyncPLC(ctx context.Context, actor string) (bool, error) {
	id, err := s.Get(ctx)
	if err != nil {
		return false, err
	}
	if id.Mode != ModeDIDPLC || id.DID == "" {
		return false, errWrongModeForSync
	}
	if s.opt.PLC == nil {
		return false, fail.New(fail.Unavailable, "no PLC directory is configured")
	}
	key, err := s.rotationKey(ctx, id.DID)
	if err != nil {
		return false, err
	}
	pub, err := key.PublicKey()
	if err != nil {
		return false, err
	}
	current, err := s.opt.PLC.State(ctx, id.DID)
	if errors.Is(err, plc.ErrNotFound) {
		return false, fail.Invalidf("%s is not registered at the PLC directory", id.DID)
	} else if err != nil {
		return false, plcFailure(err)
	}
	if !slices.Contains(current.RotationKeys, pub.DIDKey()) {
		return false, fail.Invalidf("the stored rotation key is no longer a rotation key of %s", id.DID)
	}
	want, err := s.desiredState(ctx)
	if err != nil {
		return false, err
	}
	want.RotationKeys, want.AlsoKnownAs = current.RotationKeys, current.AlsoKnownAs
	if maps.Equal(want.VerificationMethods, current.VerificationMethods) && maps.Equal(want.Services, current.Services) {
		return false, nil
	}
	head, err := s.opt.PLC.Head(ctx, id.DID)
	if err != nil {
		return false, plcFailure(err)
	}
	op := want.Next(head)
	if err := op.Sign(key); err != nil {
		return false, err
	}
	if err := s.opt.PLC.Submit(ctx, id.DID, op); err != nil {
		return false, plcFailure(err)
	}
	s.opt.Events.Record(ctx, eventlog.Entry{Type: "identity.plc_synced", ActorDID: actor, Subject: id.DID,
		Detail: map[string]any{"verification_methods": len(want.VerificationMethods), "services": len(want.Services)}})
	return true, nil
}

// desiredState is the PLC state the configuration asks for: the
// verification methods as did:keys and the services of the DID document.
func (s *Service) desiredState(ctx context.Context) (plc.State, error) {
	methods, err := s.Methods(ctx)
	if err != nil {
		return plc.State{}, err
	}
	state := plc.State{VerificationMethods: map[string]string{}, Services: map[string]plc.Service{}}
	for _, m := range methods {
		pub, err := atcrypto.ParsePublicMultibase(m.PublicKeyMultibase)
		if err != nil {
			return plc.State{}, err
		}
		state.VerificationMethods[m.Fragment] = pub.DIDKey()
	}
	services, err := s.documentServices(ctx)
	if err != nil {
		return plc.State{}, err
	}
	for _, svc := range services {
		state.Services[svc.Fragment] = plc.Service{Type: svc.Type, Endpoint: svc.Endpoint}
	}
	return state, nil
}

// plcFailure turns a PLC directory's refusal into a 400 carrying its
// message (the operation or the request was wrong) and anything else
// (unreachable, a 5xx) into an upstream failure.
func plcFailure(err error) error {
	var perr *plc.Error
	if errors.As(err, &perr) && perr.Status/100 == 4 {
		return fail.Wrap(fail.Invalid, "the PLC directory refused the operation: "+perr.Message, err)
	}
	return fail.Wrap(fail.Upstream, "the PLC directory could not be reached or failed: "+err.Error(), err)
}

// setting reads a setting, "" when absent.
func (s *Service) setting(ctx context.Context, key string) (string, error) {
	v, err := s.opt.Store.GetSetting(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return "", nil
	}
	return v, err
}
