// Package pluginaccounts is the external-account capability of plugins
// (auth_type oauth2): a signed-in user connects an account on another
// platform through a plugin, which builds the authorize URL, exchanges
// the callback's code, refreshes tokens, reads the external profile and
// returns records to sync. Lexview owns the state (random, single use,
// bound to the user, short-lived, kept with the instance's OAuth
// authorization requests), the tokens (sealed, bound to the plugin and
// the user's DID) and the writes: synced records go to the user's
// repository through their device session and are indexed like a
// procedure's (writepath).
package pluginaccounts

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/lexview/lexview/appview/internal/core/caller"
	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/plugins"
	"github.com/lexview/lexview/appview/internal/service/writepath"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
)

// Purpose is the OAuthAuthRequest purpose of a pending connection.
const Purpose = "plugin-account"

// DefaultStateTTL is how long a connection's state is accepted.
const DefaultStateTTL = 10 * time.Minute

// Plugins runs plugins' external-account exports (*plugins.Manager).
type Plugins interface {
	Auth(ctx context.Context, id, export string, input any) (json.RawMessage, error)
}

// Store is the persistence the service needs.
type Store interface {
	CreateOAuthAuthRequest(ctx context.Context, r storage.OAuthAuthRequest) error
	TakeOAuthAuthRequest(ctx context.Context, state string, now time.Time) (storage.OAuthAuthRequest, error)
	storage.PluginAccountStore
	GetDeviceSession(ctx context.Context, id string) (storage.DeviceSession, error)
}

// RecordWriter writes records to a user's repository and indexes them
// (*writepath.Service).
type RecordWriter interface {
	WriteRecord(ctx context.Context, user *caller.User, collection, rkey string, record json.RawMessage) (writepath.Answer, error)
}

// Options configure a Service.
type Options struct {
	Plugins Plugins
	Store   Store
	Writer  RecordWriter
	// Sealer seals tokens; nil (no TOKEN_ENCRYPTION_KEY) disables the
	// capability.
	Sealer *oauth.Sealer
	Events *eventlog.Log
	// PublicURL prefixes the callback URL (redirect_uri).
	PublicURL string
	StateTTL  time.Duration
	Now       func() time.Time
	Logger    *slog.Logger
}

// Service connects external accounts and syncs them.
type Service struct{ opt Options }

// New returns the service with unset options at their defaults.
func New(opt Options) *Service {
	if opt.StateTTL <= 0 {
		opt.StateTTL = DefaultStateTTL
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	return &Service{opt: opt}
}

// CallbackPath is the path of plugin id's callback (its redirect_uri).
func CallbackPath(id string) string { return "/plugins/" + url.PathEscape(id) + "/callback" }

// RedirectURI is the callback URL of plugin id.
func (s *Service) RedirectURI(id string) string {
	return strings.TrimRight(s.opt.PublicURL, "/") + CallbackPath(id)
}

// Start is a started connection.
type Start struct {
	AuthorizeURL string    `json:"authorize_url"`
	State        string    `json:"state"`
	RedirectURI  string    `json:"redirect_uri"`
	ExpiresAt    time.Time `json:"expires_at"`
}

// authorizeOut is lv_auth_authorize's answer.
type authorizeOut struct {
	URL string `json:"url"`
}

// sessionPurpose seals the device session a state carries.
func sessionPurpose(state string) string { return "plugin-state:" + state }

// tokensPurpose seals a connection's tokens, bound to plugin and user.
func tokensPurpose(pluginID, did string) string { return "plugin:" + pluginID + ":" + did + ":tokens" }

// Connect starts connecting plugin id's external account for user (a
// DPoP caller: syncs write with their device session): a fresh state is
// stored and the plugin builds the authorize URL.
func (s *Service) Connect(ctx context.Context, user *caller.User, clientID, id string) (Start, error) {
	if user == nil || user.SessionID == "" {
		return Start{}, fail.New(fail.Unauthenticated, "connecting an account needs a DPoP session")
	}
	if s.opt.Sealer == nil {
		return Start{}, fail.New(fail.Unavailable, "external accounts need TOKEN_ENCRYPTION_KEY")
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	state := base64.RawURLEncoding.EncodeToString(b)
	redirect := s.RedirectURI(id)
	out, err := s.opt.Plugins.Auth(ctx, id, plugins.ExportAuthorize, map[string]string{"state": state, "redirect_uri": redirect})
	if err != nil {
		return Start{}, pluginFailure("building the authorize URL", err)
	}
	var a authorizeOut
	if err := json.Unmarshal(out, &a); err != nil || !isHTTPURL(a.URL) {
		return Start{}, fail.Newf(fail.Upstream, "plugin %s returned no valid authorize URL", id)
	}
	sealed, err := s.opt.Sealer.SealString(sessionPurpose(state), user.SessionID)
	if err != nil {
		return Start{}, err
	}
	now := s.opt.Now()
	req := storage.OAuthAuthRequest{State: state, Purpose: Purpose, Subject: id, DomainOrigin: s.opt.PublicURL,
		ClientID: clientID, AccountDID: user.DID, SealedData: sealed, CreatedAt: now, ExpiresAt: now.Add(s.opt.StateTTL)}
	if err := s.opt.Store.CreateOAuthAuthRequest(ctx, req); err != nil {
		return Start{}, fmt.Errorf("storing the connection state: %w", err)
	}
	return Start{AuthorizeURL: a.URL, State: state, RedirectURI: redirect, ExpiresAt: req.ExpiresAt}, nil
}

func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}

// Pending is a connection whose state came back on the callback.
type Pending struct {
	PluginID, DID, ClientID, SessionID string
}

var errBadState = fail.New(fail.Invalid, "unknown, used or expired state")

// TakeState takes the state of a callback to plugin id: it is valid at
// most once, before it expires, for the plugin it was issued for.
func (s *Service) TakeState(ctx context.Context, id, state string) (Pending, error) {
	if state == "" {
		return Pending{}, fail.New(fail.Invalid, "the callback has no state")
	}
	if s.opt.Sealer == nil {
		return Pending{}, fail.New(fail.Unavailable, "external accounts need TOKEN_ENCRYPTION_KEY")
	}
	req, err := s.opt.Store.TakeOAuthAuthRequest(ctx, state, s.opt.Now())
	if errors.Is(err, storage.ErrNotFound) {
		return Pending{}, errBadState
	}
	if err != nil {
		return Pending{}, err
	}
	if req.Purpose != Purpose || req.Subject != id {
		return Pending{}, errBadState
	}
	sid, err := s.opt.Sealer.OpenString(sessionPurpose(state), req.SealedData)
	if err != nil {
		return Pending{}, errBadState
	}
	return Pending{PluginID: id, DID: req.AccountDID, ClientID: req.ClientID, SessionID: sid}, nil
}

// External is the external account, as the plugin's profile export
// describes it.
type External struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Connected is the answer to a finished connection.
type Connected struct {
	Plugin   string   `json:"plugin"`
	DID      string   `json:"did"`
	External External `json:"external"`
	Sync     Result   `json:"sync"`
}

// Finish completes pending with the callback's query params: the plugin
// exchanges them for tokens and reads the profile, the tokens are sealed
// and stored, and a first sync runs. user is whoever authenticated the
// callback request (nil when anonymous); a user other than the one
// the state was issued to is refused.
func (s *Service) Finish(ctx context.Context, p Pending, user *caller.User, params url.Values) (Connected, error) {
	if user != nil && user.DID != p.DID {
		return Connected{}, fail.New(fail.Forbidden, "this connection was started by another user")
	}
	if e := params.Get("error"); e != "" {
		return Connected{}, fail.Newf(fail.Invalid, "the provider refused the authorization: %.100s", e)
	}
	flat := map[string]string{}
	for k, v := range params {
		if len(v) > 0 {
			flat[k] = v[0]
		}
	}
	raw, err := s.opt.Plugins.Auth(ctx, p.PluginID, plugins.ExportExchange,
		map[string]any{"redirect_uri": s.RedirectURI(p.PluginID), "params": flat})
	if err != nil {
		return Connected{}, pluginFailure("exchanging the code", err)
	}
	tok, err := parseTokens(raw)
	if err != nil {
		return Connected{}, fail.Wrap(fail.Upstream, "plugin "+p.PluginID+" returned malformed tokens", err)
	}
	ext, err := s.profile(ctx, p.PluginID, tok)
	if err != nil {
		return Connected{}, err
	}
	sealed, err := s.opt.Sealer.Seal(tokensPurpose(p.PluginID, p.DID), tok)
	if err != nil {
		return Connected{}, err
	}
	now := s.opt.Now()
	acct := storage.PluginAccount{PluginID: p.PluginID, DID: p.DID, SessionID: p.SessionID, ExternalID: ext.ID,
		ExternalName: ext.Name, SealedTokens: sealed, ConnectedAt: now, UpdatedAt: now}
	// Reconnecting the same external account keeps the sync position.
	if old, err := s.opt.Store.GetPluginAccount(ctx, p.PluginID, p.DID); err == nil && old.ExternalID == ext.ID {
		acct.Cursor, acct.LastSyncAt = old.Cursor, old.LastSyncAt
	}
	if err := s.opt.Store.PutPluginAccount(ctx, acct); err != nil {
		return Connected{}, err
	}
	s.event(ctx, "plugin.account_connected", eventlog.Info, p.DID, p.PluginID, map[string]any{"external_id": ext.ID})
	out := Connected{Plugin: p.PluginID, DID: p.DID, External: ext}
	sess, err := s.opt.Store.GetDeviceSession(ctx, p.SessionID)
	if err != nil || sess.DID != p.DID {
		out.Sync.Error = "the device session that started the connection is gone; sync on demand"
		return out, nil
	}
	out.Sync, _ = s.Sync(ctx, p.PluginID, &caller.User{DID: p.DID, Via: caller.ViaDPoP, SessionID: sess.ID})
	return out, nil
}

// profile calls the plugin's profile export.
func (s *Service) profile(ctx context.Context, id string, tok json.RawMessage) (External, error) {
	raw, err := s.opt.Plugins.Auth(ctx, id, plugins.ExportProfile, map[string]any{"tokens": tok})
	if err != nil {
		return External{}, pluginFailure("reading the profile", err)
	}
	var ext External
	if err := json.Unmarshal(raw, &ext); err != nil || ext.ID == "" {
		return External{}, fail.Newf(fail.Upstream, "plugin %s returned a profile without an id", id)
	}
	return ext, nil
}

// Account is a user's connection as the API shows it (never its tokens).
type Account struct {
	Plugin      string     `json:"plugin"`
	Connected   bool       `json:"connected"`
	External    *External  `json:"external,omitempty"`
	ConnectedAt *time.Time `json:"connected_at,omitempty"`
	LastSyncAt  *time.Time `json:"last_sync_at,omitempty"`
}

// Get returns did's connection to plugin id.
func (s *Service) Get(ctx context.Context, id, did string) (Account, error) {
	a, err := s.opt.Store.GetPluginAccount(ctx, id, did)
	if errors.Is(err, storage.ErrNotFound) {
		return Account{Plugin: id}, nil
	}
	if err != nil {
		return Account{}, err
	}
	out := Account{Plugin: id, Connected: true, External: &External{ID: a.ExternalID, Name: a.ExternalName},
		ConnectedAt: &a.ConnectedAt}
	if !a.LastSyncAt.IsZero() {
		out.LastSyncAt = &a.LastSyncAt
	}
	return out, nil
}

// Disconnect deletes did's connection to plugin id and its tokens.
// NotFound when there is none.
func (s *Service) Disconnect(ctx context.Context, id, did string) error {
	err := s.opt.Store.DeletePluginAccount(ctx, id, did)
	if errors.Is(err, storage.ErrNotFound) {
		return fail.Newf(fail.NotFound, "no account connected through plugin %s", id)
	}
	if err != nil {
		return err
	}
	s.event(ctx, "plugin.account_disconnected", eventlog.Info, did, id, nil)
	return nil
}

// pluginFailure reports a failed plugin call: a plugin or runtime error
// is the upstream's fault (Upstream); a fail.Error passes through.
func pluginFailure(what string, err error) error {
	var fe *fail.Error
	if errors.As(err, &fe) {
		return err
	}
	return fail.Wrap(fail.Upstream, what+": "+err.Error(), err)
}

func (s *Service) event(ctx context.Context, typ, severity, actor, subject string, detail map[string]any) {
	if s.opt.Events == nil {
		return
	}
	s.opt.Events.Record(context.WithoutCancel(ctx), eventlog.Entry{Type: typ, Severity: severity, ActorDID: actor,
		Subject: subject, Detail: detail})
}
