// Package serviceid is the instance's service identity: its mode, its DID
// (did:web of the primary domain), the verification methods its DID
// document lists, and the document itself.
package serviceid

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/lexview/lexview/appview/internal/domains"
	"github.com/lexview/lexview/appview/internal/eventlog"
	"github.com/lexview/lexview/appview/internal/fail"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
)

// The identity modes. Only ModeDIDWeb is implemented.
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
	Now    func() time.Time
}

// Service is the service identity.
type Service struct{ opt Options }

// New returns a Service.
func New(opt Options) *Service { return &Service{opt: opt} }

// Identity is the configured identity.
type Identity struct {
	Mode string
	// DID is "" when there is no primary domain (or its host cannot be a
	// did:web).
	DID           string
	PrimaryDomain string
}

// Get returns the configured identity.
func (s *Service) Get(ctx context.Context) (Identity, error) {
	mode, err := s.opt.Store.GetSetting(ctx, ModeSetting)
	if errors.Is(err, storage.ErrNotFound) {
		mode = ModeDIDWeb
	} else if err != nil {
		return Identity{}, err
	}
	id := Identity{Mode: mode}
	if d, ok := s.opt.Domains.Primary(ctx); ok {
		id.PrimaryDomain = d.URL
		id.DID = domains.DIDWeb(domains.Host(d.URL))
	}
	return id, nil
}

// SetMode stores the identity mode on behalf of actor. Only did_web is
// available; did_plc and attach_account are refused until they are built.
func (s *Service) SetMode(ctx context.Context, actor, mode string) (Identity, error) {
	switch mode {
	case ModeDIDWeb:
	case ModeDIDPLC, ModeAttachAccount:
		return Identity{}, fail.Invalidf("identity mode %s is not available yet: only did_web is implemented", mode)
	case "":
		return Identity{}, fail.New(fail.Invalid, "mode is required")
	default:
		return Identity{}, fail.New(fail.Invalid, "invalid identity mode: use did_web, did_plc or attach_account")
	}
	if err := s.opt.Store.PutSetting(ctx, ModeSetting, mode); err != nil {
		return Identity{}, err
	}
	s.opt.Events.Record(ctx, eventlog.Entry{Type: "identity.mode_set", ActorDID: actor, Subject: mode})
	return s.Get(ctx)
}

// DID is the instance's DID now: did:web of the primary domain's host
// ("" when it has none). did_web is the only mode that can be stored, so
// the mode is not read (this runs for every service-auth token); the
// primary domain is cached by the domains service.
func (s *Service) DID(ctx context.Context) string {
	d, ok := s.opt.Domains.Primary(ctx)
	if !ok {
		return ""
	}
	return domains.DIDWeb(domains.Host(d.URL))
}

// normalHost lower-cases a request's Host and drops a default port.
func normalHost(host string) string {
	host = strings.ToLower(host)
	for _, p := range []string{":443", ":80"} {
		host = strings.TrimSuffix(host, p)
	}
	return host
}
