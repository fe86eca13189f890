package instance

import (
	"context"
	"errors"
	"fmt"

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

// Logo returns the stored logo, or storage.ErrNotFound.
func (s *Service) Logo(ctx context.Context) (storage.Blob, error) {
	b, err := s.opt.Store.GetBlob(ctx, LogoKey)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return b, fmt.Errorf("read logo: %w", err)
	}
	return b, err
}
