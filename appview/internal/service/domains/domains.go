// Package domains manages the origins the instance is served on: the
// primary domain, made from PUBLIC_URL on first boot, whose host names the
// instance's did:web, and the domains an operator adds.
package domains

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/storage"
)

// refreshAfter is how long the cached primary domain is trusted before it
// is read again (another process sharing the database may change it).
const refreshAfter = 30 * time.Second

// Options configure a Service.
type Options struct {
	Store  storage.IdentityStore
	Events *eventlog.Log
	// PublicURL is the configured public base URL: the primary domain on
	// first boot, and whether http domains are accepted (loopback only).
	PublicURL string
	Now       func() time.Time
	Logger    *slog.Logger
}

// Service manages domains.
type Service struct {
	opt Options

	mu       sync.Mutex
	primary  storage.Domain   // cached; zero when none is known
	all      []storage.Domain // cached: every domain
	loadedAt time.Time
}

// New returns a Service.
func New(opt Options) *Service { return &Service{opt: opt} }

var (
	errNotFound = fail.New(fail.NotFound, "domain not found")
	errTaken    = fail.New(fail.Invalid, "invalid domain: url already registered")
	errPrimary  = fail.New(fail.Invalid, "the primary domain cannot be deleted")
)

// EnsurePrimary runs at start-up. With no domain yet, it stores PUBLIC_URL's
// origin as the primary domain. When a primary exists and PUBLIC_URL's
// origin differs from it, the primary stays (the operator chose it, and
// the instance's DID follows it): PUBLIC_URL's origin is added as an
// ordinary domain if it is not registered, and a warning is logged. It is
// idempotent, and safe when several processes boot at once. A PUBLIC_URL
// whose origin is not a valid domain is logged, not fatal.
func (s *Service) EnsurePrimary(ctx context.Context) error {
	origin, err := s.publicOrigin()
	if err != nil {
		// Not fatal: the instance serves, without a primary domain (and so
		// without a did:web) until an operator adds one.
		s.opt.Logger.WarnContext(ctx, "no primary domain made from PUBLIC_URL", "err", err)
		_, err = s.reload(ctx)
		return err
	}
	list, err := s.opt.Store.ListDomains(ctx)
	if err != nil {
		return err
	}
	var primary *storage.Domain
	registered := false
	for i, d := range list {
		if d.IsPrimary {
			primary = &list[i]
		}
		registered = registered || d.URL == origin
	}
	now := s.opt.Now()
	switch {
	case primary == nil && registered:
		// Left without a primary (not possible through the API): PUBLIC_URL's
		// domain becomes it.
		for _, d := range list {
			if d.URL == origin {
				err = s.opt.Store.SetPrimaryDomain(ctx, d.ID, now)
			}
		}
	case primary == nil:
		err = s.opt.Store.CreateDomain(ctx, storage.Domain{ID: storage.NewID(), URL: origin, IsPrimary: true, CreatedAt: now, UpdatedAt: now})
	case primary.URL != origin:
		s.opt.Logger.WarnContext(ctx, "PUBLIC_URL is not the primary domain; the primary domain stays and names the instance's DID (change it with POST /admin/domains/{id}/primary)",
			"public_url", origin, "primary_domain", primary.URL)
		if !registered {
			err = s.opt.Store.CreateDomain(ctx, storage.Domain{ID: storage.NewID(), URL: origin, CreatedAt: now, UpdatedAt: now})
		}
	}
	if err != nil && !errors.Is(err, storage.ErrConflict) { // a concurrent boot did it
		return err
	}
	_, err = s.reload(ctx)
	return err
}

// publicOrigin is the origin of PUBLIC_URL.
func (s *Service) publicOrigin() (string, error) {
	u, err := url.Parse(s.opt.PublicURL)
	if err != nil || u.Host == "" {
		return "", errors.New("PUBLIC_URL has no host")
	}
	origin, err := ParseOrigin(u.Scheme+"://"+u.Host, s.allowHTTP())
	if err != nil {
		return "", errors.New("PUBLIC_URL's origin is not a valid domain: " + fail.Message(err))
	}
	return origin, nil
}

func (s *Service) allowHTTP() bool { return IsLoopback(s.opt.PublicURL) }

// List returns every domain, the primary first.
func (s *Service) List(ctx context.Context) ([]storage.Domain, error) {
	return s.opt.Store.ListDomains(ctx)
}

// Create adds a domain (not primary) on behalf of actor.
func (s *Service) Create(ctx context.Context, actor, rawURL string) (storage.Domain, error) {
	origin, err := ParseOrigin(rawURL, s.allowHTTP())
	if err != nil {
		return storage.Domain{}, err
	}
	now := s.opt.Now()
	d := storage.Domain{ID: storage.NewID(), URL: origin, CreatedAt: now, UpdatedAt: now}
	if err := s.opt.Store.CreateDomain(ctx, d); errors.Is(err, storage.ErrConflict) {
		return storage.Domain{}, errTaken
	} else if err != nil {
		return storage.Domain{}, err
	}
	s.refresh(ctx)
	s.audit(ctx, actor, "domain.created", d.URL, nil)
	return d, nil
}

// Delete removes a domain that is not primary.
func (s *Service) Delete(ctx context.Context, actor, id string) error {
	d, err := s.opt.Store.GetDomain(ctx, id)
	if err == nil {
		err = s.opt.Store.DeleteDomain(ctx, id)
	}
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return errNotFound
	case errors.Is(err, storage.ErrPrimaryDomain):
		return errPrimary
	case err != nil:
		return err
	}
	s.refresh(ctx)
	s.audit(ctx, actor, "domain.deleted", d.URL, nil)
	return nil
}

// SetPrimary makes a domain primary and the previous one not, in one
// transaction; the instance's DID follows.
func (s *Service) SetPrimary(ctx context.Context, actor, id string) (storage.Domain, error) {
	err := s.opt.Store.SetPrimaryDomain(ctx, id, s.opt.Now())
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return storage.Domain{}, errNotFound
	case errors.Is(err, storage.ErrConflict):
		return storage.Domain{}, fail.New(fail.Conflict, "the primary domain changed concurrently; try again")
	case err != nil:
		return storage.Domain{}, err
	}
	d, err := s.reload(ctx)
	if err != nil {
		return storage.Domain{}, err
	}
	s.audit(ctx, actor, "domain.primary_set", d.URL, nil)
	return d, nil
}

// Primary returns the primary domain (cached; read again when older than
// refreshAfter). ok is false when there is none.
func (s *Service) Primary(ctx context.Context) (storage.Domain, bool) {
	d, _ := s.cached(ctx)
	return d, d.ID != ""
}

// Match returns the registered domain a request arrived on, from its Host
// header (host[:port]; case and a default port :80 or :443 do not matter),
// using the cached list (read again when older than refreshAfter, and at
// once after this process adds or deletes a domain). ok is false for a
// host that is not registered.
//
// When PUBLIC_URL is a loopback URL (a development instance), a loopback
// host (localhost, a name under .localhost, 127.0.0.0/8 or [::1]) is an
// alias of the registered loopback domain on the same port: they all
// name this machine, so http://localhost:3000 is the instance whose
// PUBLIC_URL is http://127.0.0.1:3000. An instance with any other
// PUBLIC_URL has no aliases: only its registered hosts match.
func (s *Service) Match(ctx context.Context, host string) (storage.Domain, bool) {
	host = NormalHost(host)
	_, all := s.cached(ctx)
	for _, d := range all {
		if Host(d.URL) == host {
			return d, true
		}
	}
	if s.allowHTTP() {
		return loopbackAlias(host, all)
	}
	return storage.Domain{}, false
}

// loopbackAlias returns the first of all that is a loopback domain on the
// port of host, itself a loopback host[:port] (NormalHost's form).
func loopbackAlias(host string, all []storage.Domain) (storage.Domain, bool) {
	name, port := splitHost(host)
	if !isLoopbackName(name) {
		return storage.Domain{}, false
	}
	for _, d := range all {
		if dn, dp := splitHost(Host(d.URL)); dp == port && isLoopbackName(dn) {
			return d, true
		}
	}
	return storage.Domain{}, false
}

// splitHost splits host[:port] (an IPv6 literal in brackets) into its
// lower-case name, without brackets, and its port ("" when none).
func splitHost(host string) (name, port string) {
	if h, p, err := net.SplitHostPort(host); err == nil {
		return strings.ToLower(h), p
	}
	return strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")), ""
}

// cached returns the cached primary domain and domain list, reading them
// again when older than refreshAfter.
func (s *Service) cached(ctx context.Context) (storage.Domain, []storage.Domain) {
	s.mu.Lock()
	d, all, fresh := s.primary, s.all, !s.loadedAt.IsZero() && s.opt.Now().Sub(s.loadedAt) < refreshAfter
	s.mu.Unlock()
	if fresh {
		return d, all
	}
	if _, err := s.reload(ctx); err != nil {
		s.opt.Logger.WarnContext(ctx, "reading the domains failed; using the last ones known", "err", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.primary, s.all
}

// refresh reads the domains into the cache after a change, logging a
// failure (the cache is read again after refreshAfter anyway).
func (s *Service) refresh(ctx context.Context) {
	if _, err := s.reload(ctx); err != nil {
		s.opt.Logger.WarnContext(ctx, "reading the domains failed", "err", err)
	}
}

// reload reads the domains into the cache and returns the primary.
func (s *Service) reload(ctx context.Context) (storage.Domain, error) {
	list, err := s.opt.Store.ListDomains(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		return s.primary, err
	}
	s.primary, s.all = storage.Domain{}, list
	if len(list) > 0 && list[0].IsPrimary {
		s.primary = list[0]
	}
	s.loadedAt = s.opt.Now()
	return s.primary, nil
}

func (s *Service) audit(ctx context.Context, actor, eventType, subject string, detail any) {
	s.opt.Events.Record(ctx, eventlog.Entry{Type: eventType, ActorDID: actor, Subject: subject, Detail: detail})
}

// Invalidate makes the next lookup read the domains again, for a change
// made by another instance sharing the database.
func (s *Service) Invalidate() {
	s.mu.Lock()
	s.loadedAt = time.Time{}
	s.mu.Unlock()
}
