package instance

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lexview/lexview/storage"
)

// The settings that brand the instance: they reach every domain's OAuth
// client metadata document and GET /config.
const (
	AppNameKey           = "app_name"
	TermsOfServiceURLKey = "terms_of_service_url"
	PrivacyPolicyURLKey  = "privacy_policy_url"
)

// DefaultAppName is the app name when the setting is unset.
const DefaultAppName = "Lexview"

// Branding is what names and presents the instance to its users.
type Branding struct {
	AppName string
	// TermsOfServiceURL and PrivacyPolicyURL are "" when unset.
	TermsOfServiceURL string
	PrivacyPolicyURL  string
	// HasLogo reports whether a logo is stored.
	HasLogo bool
}

// Branding resolves the instance's branding from the settings (they have
// no environment variable); the app name falls back to DefaultAppName.
func (s *Service) Branding(ctx context.Context) (Branding, error) {
	b := Branding{
		AppName:           s.Setting(ctx, AppNameKey, ""),
		TermsOfServiceURL: s.Setting(ctx, TermsOfServiceURLKey, ""),
		PrivacyPolicyURL:  s.Setting(ctx, PrivacyPolicyURLKey, ""),
	}
	if b.AppName == "" {
		b.AppName = DefaultAppName
	}
	_, err := s.Logo(ctx)
	switch {
	case err == nil:
		b.HasLogo = true
	case !errors.Is(err, storage.ErrNotFound):
		return b, err
	}
	return b, nil
}

// logoTTL bounds how long the logo is served from memory: another
// process's change shows within it (this process's at once).
const logoTTL = 10 * time.Second

// cachedLogo is the logo as last read, or its absence.
type cachedLogo struct {
	blob  storage.Blob
	found bool
	until time.Time
}

// Logo returns the stored logo, or storage.ErrNotFound. The public
// endpoints read it on every request (the logo itself, /config and the
// client metadata documents), so it is kept in memory for logoTTL rather
// than read, up to MaxLogoSize, from the database each time.
func (s *Service) Logo(ctx context.Context) (storage.Blob, error) {
	now := s.opt.Now()
	if c := s.logo.Load(); c != nil && now.Before(c.until) {
		if !c.found {
			return storage.Blob{}, storage.ErrNotFound
		}
		return c.blob, nil
	}
	b, err := s.opt.Store.GetBlob(ctx, LogoKey)
	switch {
	case err == nil:
		s.logo.Store(&cachedLogo{blob: b, found: true, until: now.Add(logoTTL)})
	case errors.Is(err, storage.ErrNotFound):
		s.logo.Store(&cachedLogo{until: now.Add(logoTTL)})
	default:
		return b, fmt.Errorf("read logo: %w", err)
	}
	return b, err
}
