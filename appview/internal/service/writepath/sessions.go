package writepath

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lexview/lexview/appview/internal/service/clientkeys"
	"github.com/lexview/lexview/appview/internal/service/devicesessions"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
)

// SessionStore is the persistence SessionSource needs.
type SessionStore interface {
	storage.OAuthStore
	GetAPIClient(ctx context.Context, id string) (storage.APIClient, error)
}

// SessionSource lets the PDS write client (oauth.Client) load device
// sessions, opening their sealed secrets, and store refreshed tokens,
// sealed, with the optimistic version check.
type SessionSource struct {
	store  SessionStore
	sealer *oauth.Sealer
	now    func() time.Time
}

// SessionSourceOptions configures NewSessionSource.
type SessionSourceOptions struct {
	// Store holds the device sessions.
	Store SessionStore
	// Sealer opens and seals their secrets.
	Sealer *oauth.Sealer
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// NewSessionSource returns the session source over opts.Store.
func NewSessionSource(opts SessionSourceOptions) *SessionSource {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &SessionSource{store: opts.Store, sealer: opts.Sealer, now: opts.Now}
}

// Load implements oauth.SessionSource.
func (s *SessionSource) Load(ctx context.Context, id string) (*oauth.UserSession, error) {
	ds, err := s.store.GetDeviceSession(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("load session: %w", err)
	}
	client, err := s.store.GetAPIClient(ctx, ds.ClientID)
	if err != nil {
		return nil, fmt.Errorf("load session client: %w", err)
	}
	access, err := s.sealer.OpenString(devicesessions.AccessTokenPurpose(ds.ID), ds.SealedAccessToken)
	if err != nil {
		return nil, err
	}
	refresh, err := s.sealer.OpenString(devicesessions.RefreshTokenPurpose(ds.ID), ds.SealedRefreshToken)
	if err != nil {
		return nil, err
	}
	rawKey, err := s.sealer.Open(devicesessions.DPoPKeyPurpose(ds.ID), ds.SealedDPoPKey)
	if err != nil {
		return nil, err
	}
	key, err := oauth.ParsePrivateKey(rawKey)
	if err != nil {
		return nil, err
	}
	us := &oauth.UserSession{
		ID: ds.ID, DID: ds.DID, PDSURL: ds.PDSURL, Issuer: ds.Issuer, ClientID: client.ClientIDURL,
		AccessToken: access, RefreshToken: refresh, ExpiresAt: ds.ExpiresAt, Scopes: ds.Scopes, DPoPKey: key,
		Version: ds.Version,
	}
	if ds.AuthKID != "" {
		us.ClientAssertion = s.assertion(ds.ClientID, ds.AuthKID, client.ClientIDURL)
	}
	return us, nil
}

// assertion signs refresh requests of sessions a confidential client
// established with its delegated key (the key that established the session
// keeps signing for it, even while retiring).
func (s *SessionSource) assertion(clientID, kid, clientIDURL string) func(context.Context, string) (string, error) {
	return func(ctx context.Context, issuer string) (string, error) {
		k, err := s.store.GetClientAuthKey(ctx, clientID, kid)
		if err != nil {
			return "", err
		}
		if k.Status == storage.AuthKeyRevoked {
			return "", errors.New("the session's client authentication key was revoked")
		}
		priv, err := clientkeys.PrivateKey(s.sealer, k)
		if err != nil {
			return "", err
		}
		jwt, _, err := oauth.NewClientAssertion(priv, kid, clientIDURL, issuer, s.now())
		return jwt, err
	}
}

// SaveTokens implements oauth.SessionSource.
func (s *SessionSource) SaveTokens(ctx context.Context, us *oauth.UserSession, t oauth.Tokens) (*oauth.UserSession, error) {
	access, err := s.sealer.SealString(devicesessions.AccessTokenPurpose(us.ID), t.AccessToken)
	if err != nil {
		return nil, err
	}
	refresh, err := s.sealer.SealString(devicesessions.RefreshTokenPurpose(us.ID), t.RefreshToken)
	if err != nil {
		return nil, err
	}
	_, err = s.store.UpdateDeviceSessionTokens(ctx, storage.SessionTokens{
		SessionID: us.ID, Version: us.Version, SealedAccessToken: access, SealedRefreshToken: refresh,
		ExpiresAt: t.ExpiresAt, Scopes: t.Scopes, UpdatedAt: s.now(),
	})
	if errors.Is(err, storage.ErrStale) {
		return nil, fmt.Errorf("%w: %w", oauth.ErrSessionStale, err)
	}
	if err != nil {
		return nil, err
	}
	return s.Load(ctx, us.ID)
}
