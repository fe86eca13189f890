package storage

import (
	"context"
	"time"
)

// Plugin is an installed WASM plugin: its manifest as fetched, the module
// it names, and where both came from.
type Plugin struct {
	ID string
	// URL is the manifest URL the plugin was installed from.
	URL string
	// SHA256 pins the module (hex); "" when the install was not pinned.
	SHA256 string
	// Manifest is the manifest JSON as fetched.
	Manifest []byte
	// WASM is the module the manifest names.
	WASM        []byte
	Enabled     bool
	InstalledAt time.Time
	UpdatedAt   time.Time
}

// PluginSecret is one secret of a plugin, sealed by the caller
// (AES-256-GCM); the store never sees plaintext. Secrets outlive their
// plugin: deleting a plugin keeps them for a reinstall.
type PluginSecret struct {
	PluginID  string
	Key       string
	Sealed    string
	UpdatedAt time.Time
}

// PluginStore keeps installed plugins and their sealed secrets.
type PluginStore interface {
	// PutPlugin inserts p or replaces the plugin of p.ID; replacing keeps
	// the stored InstalledAt. A zero UpdatedAt means now.
	PutPlugin(ctx context.Context, p Plugin) error
	// GetPlugin returns one plugin or ErrNotFound.
	GetPlugin(ctx context.Context, id string) (Plugin, error)
	// ListPlugins returns every plugin ordered by ID.
	ListPlugins(ctx context.Context) ([]Plugin, error)
	// DeletePlugin removes a plugin (its secrets stay) or returns
	// ErrNotFound.
	DeletePlugin(ctx context.Context, id string) error
	// ListPluginSecrets returns a plugin's secrets ordered by key.
	ListPluginSecrets(ctx context.Context, pluginID string) ([]PluginSecret, error)
	// UpdatePluginSecrets stores set (inserting or replacing by key) and
	// removes the keys in clear, in one transaction.
	UpdatePluginSecrets(ctx context.Context, pluginID string, set []PluginSecret, clear []string) error
}

// PluginAccount is a user's connection to an external account through an
// external-account plugin (auth_type oauth2): the tokens the plugin got,
// sealed by the caller (bound to the plugin and the user's DID), and the
// sync cursor the plugin hands back on every sync. Keyed by plugin and
// DID: one external account per user and plugin.
type PluginAccount struct {
	PluginID string
	DID      string
	// SessionID is the device session that connected the account; syncs
	// that are not started by a request write with it.
	SessionID string
	// ExternalID and ExternalName identify the external account (from
	// the plugin's profile export).
	ExternalID   string
	ExternalName string
	// SealedTokens is the sealed token set; the store never sees it open.
	SealedTokens string
	// Cursor is the plugin's sync cursor ("" before the first sync).
	Cursor      string
	ConnectedAt time.Time
	UpdatedAt   time.Time
	// LastSyncAt is the last successful sync; zero when none.
	LastSyncAt time.Time
}

// PluginAccountStore keeps users' external-account connections.
type PluginAccountStore interface {
	// PutPluginAccount inserts a or replaces the account of (PluginID,
	// DID); replacing keeps the stored ConnectedAt. A zero UpdatedAt
	// means now.
	PutPluginAccount(ctx context.Context, a PluginAccount) error
	// GetPluginAccount returns one account or ErrNotFound.
	GetPluginAccount(ctx context.Context, pluginID, did string) (PluginAccount, error)
	// DeletePluginAccount removes one account or returns ErrNotFound.
	DeletePluginAccount(ctx context.Context, pluginID, did string) error
}
