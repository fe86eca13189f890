package plugins

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/lexview/lexview/appview/internal/core/fail"
)

// Exports of the external-account capability (auth_type oauth2), each
// lv_auth_<name>(in_ptr, in_len i32) -> i64 with JSON in and the envelope
// out (docs/plugins.md).
const (
	ExportAuthorize = "lv_auth_authorize"
	ExportExchange  = "lv_auth_exchange"
	ExportRefresh   = "lv_auth_refresh"
	ExportProfile   = "lv_auth_profile"
	ExportSync      = "lv_auth_sync"
)

// AuthExports are the exports an oauth2 plugin must provide.
var AuthExports = []string{ExportAuthorize, ExportExchange, ExportRefresh, ExportProfile, ExportSync}

// checkAuthExports refuses an oauth2 plugin whose module lacks one of
// AuthExports.
func checkAuthExports(mf Manifest, has func(string) bool) error {
	if mf.AuthType != AuthOAuth2 {
		return nil
	}
	for _, e := range AuthExports {
		if !has(e) {
			return fmt.Errorf("plugin %s has auth_type oauth2 but its module does not export %s", mf.ID, e)
		}
	}
	return nil
}

// Auth calls the external-account export of plugin id with input encoded
// as JSON and returns the "ok" value of its envelope. NotFound when the
// plugin is not loaded or is not an oauth2 plugin.
func (m *Manager) Auth(ctx context.Context, id, export string, input any) (json.RawMessage, error) {
	p, ok := m.get(id)
	if !ok || p.manifest.AuthType != AuthOAuth2 {
		return nil, fail.Newf(fail.NotFound, "no external-account plugin %s", id)
	}
	in, err := json.Marshal(input)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: encoding the input of %s: %w", id, export, err)
	}
	return p.module.Invoke(ctx, export, in)
}
