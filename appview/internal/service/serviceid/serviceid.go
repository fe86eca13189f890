// Package serviceid is the instance's service identity: its mode, its DID
// (did:web of the primary domain, or a did:plc it registered or adopted),
// the verification methods and services its DID document lists, the
// document itself, and the PLC operations that keep a did:plc's document
// in line with the configuration.
package serviceid

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/bluesky-social/indigo/atproto/identity"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/core/plc"
	"github.com/lexview/lexview/appview/internal/service/domains"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
)

// The identity modes.
const (
	ModeDIDWeb        = "did_web"
	ModeDIDPLC        = "did_plc"
	ModeAttachAccount = "attach_account"
)

// ModeSetting is the instance setting holding the mode (reserved: the
// settings endpoints refuse it).
const ModeSetting = "identity.mode"

// Store is the persistence the service needs.
type Store interface {
	storage.IdentityStore
	// ListServiceEntries lists the services the DID document names.
	ListServiceEntries(ctx context.Context) ([]storage.ServiceEntry, error)
	GetSetting(ctx context.Context, key string) (string, error)
	PutSetting(ctx context.Context, key, value string) error
}

// Options configure a Service.
type Options struct {
	Store   Store
	Domains *domains.Service
	// Sealer seals generated private keys; nil: generation is refused.
	Sealer *oauth.Sealer
	Events *eventlog.Log
	// PLC is the PLC directory; nil refuses the did_plc mode.
	PLC *plc.Client
	// Directory resolves the account attach_account names; HTTP calls its
	// PDS (the guarded client).
	Directory identity.Directory
	HTTP      *http.Client
	Now       func() time.Time
}

// Service is the service identity.
type Service struct {
	opt Options
	// cached is the identity DID answers from, for cacheTTL.
	cached atomic.Pointer[cachedIdentity]
}

// cacheTTL bounds how long DID serves a cached identity: another process
// sharing the database sees a change within this time.
const cacheTTL = 30 * time.Second

type cachedIdentity struct {
	mode, did string
	until     time.Time
}

// New returns a Service.
func New(opt Options) *Service { return &Service{opt: opt} }

// Identity is the configured identity.
type Identity struct {
	Mode string
	// DID is "" when there is no primary domain (or its host cannot be a
	// did:web).
	DID           string
	PrimaryDomain string
	// RotationKey is the did:key of the stored PLC rotation key (did_plc).
	RotationKey string
	// AccountHandle and AccountPDS describe the attached account
	// (attach_account).
	AccountHandle, AccountPDS string
}

// Get returns the configured identity.
func (s *Service) Get(ctx context.Context) (Identity, error) {
	mode, err := s.setting(ctx, ModeSetting)
	if err != nil {
		return Identity{}, err
	}
	if mode == "" {
		mode = ModeDIDWeb
	}
	id := Identity{Mode: mode}
	if d, ok := s.opt.Domains.Primary(ctx); ok {
		id.PrimaryDomain = d.URL
	}
	switch mode {
	case ModeDIDWeb:
		if id.PrimaryDomain != "" {
			id.DID = domains.DIDWeb(domains.Host(id.PrimaryDomain))
		}
	case ModeDIDPLC:
		if id.DID, err = s.setting(ctx, PLCDIDSetting); err != nil {
			return Identity{}, err
		}
		id.RotationKey = s.RotationKeyDID(ctx, id.DID)
	case ModeAttachAccount:
		if id.DID, err = s.setting(ctx, AccountDIDSetting); err != nil {
			return Identity{}, err
		}
		if sess, err := s.session(ctx); err == nil {
			id.AccountHandle, id.AccountPDS = sess.Handle, sess.PDS
		}
	}
	s.cached.Store(&cachedIdentity{mode: id.Mode, did: id.DID, until: s.opt.Now().Add(cacheTTL)})
	return id, nil
}

// IdentityChange is a PUT /admin/service-identity: the mode, and how to
// get the DID for did_plc (PLC) or attach_account (Account).
type IdentityChange struct {
	Mode    string
	PLC     PLCRequest
	Account AccountRequest
}

// SetMode changes the identity on behalf of actor. did_plc registers a new
// DID (PLC.Create) or adopts one (PLC.DID and PLC.RotationKey);
// attach_account signs in to an account (Account); both keep what was
// configured before when given nothing.
func (s *Service) SetMode(ctx context.Context, actor string, ch IdentityChange) (Identity, error) {
	switch ch.Mode {
	case ModeDIDWeb:
		if ch.PLC != (PLCRequest{}) || ch.Account != (AccountRequest{}) {
			return Identity{}, fail.New(fail.Invalid, "the did_web mode takes no other field")
		}
	case ModeDIDPLC:
		if ch.Account != (AccountRequest{}) {
			return Identity{}, fail.New(fail.Invalid, "identifier, password and auth_factor_token belong to the attach_account mode")
		}
		if err := s.setPLC(ctx, actor, ch.PLC); err != nil {
			return Identity{}, err
		}
	case ModeAttachAccount:
		if ch.PLC != (PLCRequest{}) {
			return Identity{}, fail.New(fail.Invalid, "create, did and rotation_key belong to the did_plc mode")
		}
		if err := s.setAccount(ctx, actor, ch.Account); err != nil {
			return Identity{}, err
		}
	case "":
		return Identity{}, fail.New(fail.Invalid, "mode is required")
	default:
		return Identity{}, fail.New(fail.Invalid, "invalid identity mode: use did_web, did_plc or attach_account")
	}
	if err := s.opt.Store.PutSetting(ctx, ModeSetting, ch.Mode); err != nil {
		return Identity{}, err
	}
	s.opt.Events.Record(ctx, eventlog.Entry{Type: "identity.mode_set", ActorDID: actor, Subject: ch.Mode})
	return s.Get(ctx)
}

// DID is the instance's DID now ("" when it has none): did:web of the
// primary domain's host, or the configured did:plc. It runs for every
// service-auth token, so it answers from an identity at most cacheTTL
// old; the primary domain is cached by the domains service.
func (s *Service) DID(ctx context.Context) string {
	c := s.cached.Load()
	if c == nil || s.opt.Now().After(c.until) {
		id, err := s.Get(ctx)
		if err != nil {
			return ""
		}
		c = &cachedIdentity{mode: id.Mode, did: id.DID}
	}
	if c.mode != ModeDIDWeb {
		return c.did
	}
	d, ok := s.opt.Domains.Primary(ctx)
	if !ok {
		return ""
	}
	return domains.DIDWeb(domains.Host(d.URL))
}

// Invalidate drops the cached identity, for a change made by another
// instance sharing the database.
func (s *Service) Invalidate() { s.cached.Store(nil) }
