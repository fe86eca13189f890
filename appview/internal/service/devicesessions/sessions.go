// Package devicesessions is the service for OAuth device sessions: an app's
// client asks the instance for a DPoP key for one device (a provision),
// then registers the session its user signed in with, bound to that key;
// sessions are listed and revoked per account and per device. The caller's
// client has been authenticated by the front end.
package devicesessions

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
)

// ProvisionPrefix starts every provision_id.
const ProvisionPrefix = "hvp_"

// provisionLifetime is how long a provisioned key waits for its session.
const provisionLifetime = 10 * time.Minute

// provisionPurpose seals a provisioned key until a session takes it.
func provisionPurpose(id string) string { return "provision:" + id + ":dpop_key" }

func hashHandle(handle string) string {
	sum := sha256.Sum256([]byte(handle))
	return hex.EncodeToString(sum[:])
}

// Service manages device sessions.
type Service struct {
	store    storage.OAuthStore
	sealer   *oauth.Sealer
	verifier *Verifier
	events   *eventlog.Log // nil records nothing
	now      func() time.Time
	signedIn func(did string)
}

// Options configure a Service.
type Options struct {
	Store storage.OAuthStore
	// Sealer seals the provisioned keys and the sessions' tokens.
	Sealer *oauth.Sealer
	// Verifier confirms registrations.
	Verifier *Verifier
	// Events records the service's actions; nil records nothing.
	Events *eventlog.Log
	Now    func() time.Time // default time.Now
	// SignedIn, when set, is called with the DID of each account a device
	// session is registered for (the on-demand backfill of its
	// repository); it must not wait.
	SignedIn func(did string)
}

// New returns the service.
func New(opts Options) *Service {
	s := &Service{store: opts.Store, sealer: opts.Sealer, verifier: opts.Verifier, events: opts.Events, now: opts.Now, signedIn: opts.SignedIn}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

var (
	errSessionNotFound  = fail.New(fail.NotFound, "session not found")
	errUnknownProvision = fail.New(fail.Invalid, "unknown, used or expired provision_id")
)

func (s *Service) record(ctx context.Context, eventType, subject string, detail map[string]any) {
	if s.events != nil {
		s.events.Record(ctx, eventlog.Entry{Type: eventType, Subject: subject, Detail: detail})
	}
}

// Provision makes a fresh P-256 key for one device of client c and
// returns it with a single-use provision handle to register it with.
// Public clients must bind the provision to an S256 PKCE challenge.
func (s *Service) Provision(ctx context.Context, c storage.APIClient, pkceChallenge string) (string, oauth.PrivateJWK, error) {
	if c.Type == storage.ClientPublic && !oauth.ValidPKCEChallenge(pkceChallenge) {
		return "", oauth.PrivateJWK{}, fail.New(fail.Invalid, "public clients must send an S256 pkce_challenge")
	}
	key, err := oauth.GenerateKey()
	if err != nil {
		return "", oauth.PrivateJWK{}, err
	}
	jwk, err := oauth.NewPrivateJWK(key)
	if err != nil {
		return "", jwk, err
	}
	jkt, err := oauth.JWKThumbprint(&key.PublicKey)
	if err != nil {
		return "", jwk, err
	}
	raw, err := oauth.MarshalPrivateKey(key)
	if err != nil {
		return "", jwk, err
	}
	id := storage.NewID()
	sealed, err := s.sealer.Seal(provisionPurpose(id), raw)
	if err != nil {
		return "", jwk, err
	}
	handle := ProvisionPrefix + randomToken()
	now := s.now()
	p := storage.DPoPProvision{ID: id, HandleHash: hashHandle(handle), ClientID: c.ID, SealedKey: sealed, JKT: jkt,
		CreatedAt: now, ExpiresAt: now.Add(provisionLifetime)}
	if c.Type == storage.ClientPublic {
		p.PKCEChallenge = pkceChallenge
	}
	if err := s.store.CreateDPoPProvision(ctx, p); err != nil {
		return "", jwk, err
	}
	s.record(ctx, "oauth.dpop_key_provisioned", c.ID, map[string]any{"dpop_key_id": id, "client_type": c.Type})
	return handle, jwk, nil
}

// Registration is a session an app registers for a provisioned key.
type Registration struct {
	ProvisionID  string
	PKCEVerifier string
	DID          string
	AccessToken  string
	RefreshToken string
	ExpiresAt    string // RFC 3339
	Scopes       string
	PDSURL       string
	Issuer       string
}

// validate checks a registration against the client; it returns the
// parsed expiry.
func (req Registration) validate(c storage.APIClient) (time.Time, error) {
	if req.ProvisionID == "" || req.DID == "" || req.AccessToken == "" || req.RefreshToken == "" ||
		req.ExpiresAt == "" || req.Scopes == "" || req.PDSURL == "" || req.Issuer == "" {
		return time.Time{}, fail.New(fail.Invalid, "invalid request body")
	}
	if _, err := syntax.ParseDID(req.DID); err != nil {
		return time.Time{}, fail.New(fail.Invalid, "did is not a valid DID")
	}
	expires, err := time.Parse(time.RFC3339, req.ExpiresAt)
	if err != nil {
		return time.Time{}, fail.New(fail.Invalid, "expires_at must be an RFC 3339 timestamp")
	}
	scopes := strings.Fields(req.Scopes)
	if !slices.Contains(scopes, "atproto") {
		return time.Time{}, fail.New(fail.Invalid, "scopes must include atproto")
	}
	allowed := strings.Fields(c.Scopes)
	for _, sc := range scopes {
		if !slices.Contains(allowed, sc) {
			return time.Time{}, fail.New(fail.Invalid, "scope "+sc+" is not granted to this client")
		}
	}
	for _, f := range []struct{ name, url string }{{"pds_url", req.PDSURL}, {"issuer", req.Issuer}} {
		p, err := url.Parse(f.url)
		if err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
			return time.Time{}, fail.New(fail.Invalid, f.name+" must be an http(s) URL")
		}
	}
	return expires, nil
}

// Register stores the device session an app registers for a provision of
// client c, once the network confirms it (see Verifier): the provision is
// used only then, so a registration refused because a PDS could not
// answer may be retried with it.
func (s *Service) Register(ctx context.Context, c storage.APIClient, req Registration) (storage.DeviceSession, error) {
	expires, err := req.validate(c)
	if err != nil {
		return storage.DeviceSession{}, err
	}
	handle := hashHandle(req.ProvisionID)
	p, err := s.store.GetDPoPProvision(ctx, c.ID, handle, s.now())
	if errors.Is(err, storage.ErrNotFound) {
		return storage.DeviceSession{}, errUnknownProvision
	}
	if err != nil {
		return storage.DeviceSession{}, err
	}
	if p.PKCEChallenge != "" && oauth.VerifyPKCE(req.PKCEVerifier, p.PKCEChallenge) != nil {
		return storage.DeviceSession{}, fail.New(fail.Invalid, "pkce_verifier does not match the pkce_challenge")
	}
	rawKey, err := s.sealer.Open(provisionPurpose(p.ID), p.SealedKey)
	if err != nil {
		return storage.DeviceSession{}, err
	}
	key, err := oauth.ParsePrivateKey(rawKey)
	if err != nil {
		return storage.DeviceSession{}, err
	}
	if req.PDSURL, req.Issuer, err = s.verifier.Verify(ctx, req, key); err != nil {
		s.record(ctx, "oauth.session_refused", req.DID, map[string]any{"client_id": c.ID, "reason": fail.Message(err)})
		return storage.DeviceSession{}, err
	}
	if _, err := s.store.ConsumeDPoPProvision(ctx, c.ID, handle, s.now()); errors.Is(err, storage.ErrNotFound) {
		return storage.DeviceSession{}, errUnknownProvision // used concurrently, or expired meanwhile
	} else if err != nil {
		return storage.DeviceSession{}, err
	}
	sess, err := s.newSession(ctx, c, p, rawKey, req, expires)
	if err != nil {
		return sess, err
	}
	s.record(ctx, "oauth.session_created", req.DID, map[string]any{"client_id": c.ID, "session_id": sess.ID, "scopes": req.Scopes})
	if s.signedIn != nil {
		s.signedIn(req.DID)
	}
	return sess, nil
}

// newSession re-seals the provisioned key and the tokens for a new session.
func (s *Service) newSession(ctx context.Context, c storage.APIClient, p storage.DPoPProvision, key []byte,
	req Registration, expires time.Time) (storage.DeviceSession, error) {
	now := s.now()
	sess := storage.DeviceSession{ID: storage.NewID(), ClientID: c.ID, DID: req.DID, DPoPKeyID: p.ID, JKT: p.JKT,
		ExpiresAt: expires, Scopes: strings.Join(strings.Fields(req.Scopes), " "), PDSURL: req.PDSURL,
		Issuer: req.Issuer, CreatedAt: now, UpdatedAt: now,
		AppTokenHash: TokenHash(req.AccessToken), AppExpiresAt: expires}
	if k, err := s.store.GetCurrentClientAuthKey(ctx, c.ID); err == nil {
		sess.AuthKID = k.KID
	}
	var err error
	for _, f := range []struct {
		dst     *string
		purpose string
		value   []byte
	}{
		{&sess.SealedDPoPKey, DPoPKeyPurpose(sess.ID), key},
		{&sess.SealedAccessToken, AccessTokenPurpose(sess.ID), []byte(req.AccessToken)},
		{&sess.SealedRefreshToken, RefreshTokenPurpose(sess.ID), []byte(req.RefreshToken)},
	} {
		if *f.dst, err = s.sealer.Seal(f.purpose, f.value); err != nil {
			return storage.DeviceSession{}, err
		}
	}
	return sess, s.store.CreateDeviceSession(ctx, sess)
}

// RevokeAccount ends the sessions of an account with client clientID:
// every one, or, when own is set (a device acting for itself), only own.
// It returns how many.
func (s *Service) RevokeAccount(ctx context.Context, clientID, did string, own *storage.DeviceSession) (int64, error) {
	var n int64
	var err error
	if own != nil {
		err, n = s.store.DeleteDeviceSession(ctx, clientID, did, own.ID), 1
	} else {
		n, err = s.store.DeleteDeviceSessions(ctx, clientID, did)
	}
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return 0, err
	}
	s.record(ctx, "oauth.session_deleted", did, map[string]any{"client_id": clientID, "sessions": n})
	return n, nil
}

// Devices lists an account's sessions with client clientID.
func (s *Service) Devices(ctx context.Context, clientID, did string) ([]storage.DeviceSession, error) {
	return s.store.ListDeviceSessions(ctx, clientID, did)
}

// RevokeDevice ends one session of an account with client clientID; a
// device acting for itself (own set) can end only its own.
func (s *Service) RevokeDevice(ctx context.Context, clientID, did, id string, own *storage.DeviceSession) error {
	if own != nil && own.ID != id {
		return errSessionNotFound
	}
	err := s.store.DeleteDeviceSession(ctx, clientID, did, id)
	if errors.Is(err, storage.ErrNotFound) {
		return errSessionNotFound
	}
	if err != nil {
		return err
	}
	s.record(ctx, "oauth.session_deleted", did, map[string]any{"client_id": clientID, "session_id": id})
	return nil
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
