package pluginaccounts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/caller"
	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/plugins"
	"github.com/lexview/lexview/storage"
)

// MaxSyncRecords bounds the records of one sync answer.
const MaxSyncRecords = 100

// refreshMargin: tokens expiring within it are refreshed before a sync.
const refreshMargin = 30_000 // ms

// Result is what a sync did.
type Result struct {
	Written    int       `json:"written"`
	NotIndexed int       `json:"not_indexed"`
	Refused    []Refusal `json:"refused"`
	Refreshed  bool      `json:"refreshed"`
	// Error says why the sync stopped ("" when it finished).
	Error string `json:"error,omitempty"`
}

// Refusal is a record of a sync answer that was not written.
type Refusal struct {
	Collection string `json:"collection"`
	RKey       string `json:"rkey,omitempty"`
	Reason     string `json:"reason"`
}

// syncOut is lv_auth_sync's answer.
type syncOut struct {
	Records      []syncRecord `json:"records"`
	Cursor       *string      `json:"cursor"`
	NeedsRefresh bool         `json:"needs_refresh"`
}

type syncRecord struct {
	Collection string          `json:"collection"`
	RKey       string          `json:"rkey"`
	Record     json.RawMessage `json:"record"`
}

// tokenInfo is what Lexview reads of a plugin's (otherwise opaque) tokens.
type tokenInfo struct {
	ExpiresAt int64 `json:"expires_at"` // Unix ms; 0: unknown
}

// parseTokens checks that a plugin's tokens are a JSON object.
func parseTokens(raw json.RawMessage) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, errors.New("the tokens are not a JSON object")
	}
	var ti tokenInfo
	if err := json.Unmarshal(raw, &ti); err != nil {
		return nil, fmt.Errorf("expires_at: %w", err)
	}
	return raw, nil
}

// Sync runs plugin id's sync export for user's connection and writes
// the records it returns into user's repository through user's
// device session. Tokens about to expire are refreshed first; a plugin
// that answers needs_refresh gets fresh tokens and one more try. The
// cursor advances only when every record was written or refused; a
// record the instance has no lexicon for, or that does not validate, is
// refused (not written). The Result is returned with the error too.
func (s *Service) Sync(ctx context.Context, id string, user *caller.User) (Result, error) {
	res := Result{Refused: []Refusal{}}
	if user == nil || user.SessionID == "" {
		return res, fail.New(fail.Unauthenticated, "syncing needs a DPoP session")
	}
	if s.opt.Sealer == nil {
		return res, fail.New(fail.Unavailable, "external accounts need TOKEN_ENCRYPTION_KEY")
	}
	acct, err := s.opt.Store.GetPluginAccount(ctx, id, user.DID)
	if errors.Is(err, storage.ErrNotFound) {
		return res, fail.Newf(fail.NotFound, "no account connected through plugin %s", id)
	}
	if err != nil {
		return res, err
	}
	err = s.sync(ctx, &acct, user, &res)
	detail := map[string]any{"written": res.Written, "not_indexed": res.NotIndexed, "refused": len(res.Refused),
		"refreshed": res.Refreshed}
	severity := eventlog.Info
	if err != nil {
		res.Error = err.Error()
		detail["error"] = res.Error
		severity = eventlog.Warn
	}
	s.event(ctx, "plugin.sync", severity, user.DID, id, detail)
	return res, err
}

func (s *Service) sync(ctx context.Context, acct *storage.PluginAccount, user *caller.User, res *Result) error {
	id := acct.PluginID
	tok, err := s.opt.Sealer.Open(tokensPurpose(id, acct.DID), acct.SealedTokens)
	if err != nil {
		return fmt.Errorf("opening the stored tokens: %w", err)
	}
	var ti tokenInfo
	_ = json.Unmarshal(tok, &ti)
	if ti.ExpiresAt != 0 && ti.ExpiresAt-refreshMargin <= s.opt.Now().UnixMilli() {
		if tok, err = s.refresh(ctx, acct, tok); err != nil {
			return err
		}
		res.Refreshed = true
	}
	out, err := s.callSync(ctx, acct, tok)
	if err == nil && out.NeedsRefresh && !res.Refreshed {
		if tok, err = s.refresh(ctx, acct, tok); err != nil {
			return err
		}
		res.Refreshed = true
		out, err = s.callSync(ctx, acct, tok)
	}
	if err != nil {
		return err
	}
	if out.NeedsRefresh {
		return fail.Newf(fail.Upstream, "plugin %s still needs a refresh after one", id)
	}
	for _, r := range out.Records {
		ans, err := s.opt.Writer.WriteRecord(ctx, user, r.Collection, r.RKey, r.Record)
		var fe *fail.Error
		switch {
		case errors.As(err, &fe) && fe.Kind == fail.Invalid:
			res.Refused = append(res.Refused, Refusal{Collection: r.Collection, RKey: r.RKey, Reason: fe.Message})
			continue
		case err != nil:
			return fmt.Errorf("writing to the PDS: %w", err)
		case ans.Status != http.StatusOK:
			return fail.Newf(fail.Upstream, "the PDS answered %d to a synced record", ans.Status)
		}
		res.Written++
		if ans.NotIndexed != "" {
			res.NotIndexed++
		}
	}
	if out.Cursor != nil {
		acct.Cursor = *out.Cursor
	}
	acct.LastSyncAt = s.opt.Now()
	acct.UpdatedAt = acct.LastSyncAt
	return s.opt.Store.PutPluginAccount(ctx, *acct)
}

// callSync calls the sync export and checks its answer's shape.
func (s *Service) callSync(ctx context.Context, acct *storage.PluginAccount, tok json.RawMessage) (syncOut, error) {
	raw, err := s.opt.Plugins.Auth(ctx, acct.PluginID, plugins.ExportSync, map[string]any{
		"tokens": tok, "cursor": acct.Cursor, "profile": External{ID: acct.ExternalID, Name: acct.ExternalName}})
	if err != nil {
		return syncOut{}, pluginFailure("syncing", err)
	}
	var out syncOut
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		return syncOut{}, malformed(acct.PluginID, err.Error())
	}
	if len(out.Records) > MaxSyncRecords {
		return syncOut{}, malformed(acct.PluginID, fmt.Sprintf("%d records are more than %d", len(out.Records), MaxSyncRecords))
	}
	for i, r := range out.Records {
		if _, err := syntax.ParseNSID(r.Collection); err != nil {
			return syncOut{}, malformed(acct.PluginID, fmt.Sprintf("records[%d].collection %q is not an NSID", i, r.Collection))
		}
		if len(bytes.TrimSpace(r.Record)) == 0 || bytes.TrimSpace(r.Record)[0] != '{' {
			return syncOut{}, malformed(acct.PluginID, fmt.Sprintf("records[%d].record is not a JSON object", i))
		}
	}
	return out, nil
}

func malformed(id, why string) error {
	return fail.Newf(fail.Upstream, "plugin %s returned a malformed sync answer: %s", id, why)
}

// refresh calls the refresh export and stores the new tokens, sealed.
func (s *Service) refresh(ctx context.Context, acct *storage.PluginAccount, tok json.RawMessage) (json.RawMessage, error) {
	raw, err := s.opt.Plugins.Auth(ctx, acct.PluginID, plugins.ExportRefresh, map[string]any{"tokens": tok})
	if err != nil {
		return nil, pluginFailure("refreshing the tokens", err)
	}
	fresh, err := parseTokens(raw)
	if err != nil {
		return nil, fail.Wrap(fail.Upstream, "plugin "+acct.PluginID+" returned malformed tokens", err)
	}
	sealed, err := s.opt.Sealer.Seal(tokensPurpose(acct.PluginID, acct.DID), fresh)
	if err != nil {
		return nil, err
	}
	acct.SealedTokens, acct.UpdatedAt = sealed, s.opt.Now()
	if err := s.opt.Store.PutPluginAccount(ctx, *acct); err != nil {
		return nil, err
	}
	return fresh, nil
}
