package linkedrepos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/bluesky-social/indigo/atproto/atclient"
	indigooauth "github.com/bluesky-social/indigo/atproto/auth/oauth"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/script"
	"github.com/lexview/lexview/storage"
)

// Sessions runs code with a grant's OAuth session (oauthclient.Client):
// the session signs DPoP requests to the account's PDS and refreshes its
// tokens when the PDS says they expired, while no other user of the same
// session (the background refresh) runs.
type Sessions interface {
	WithSession(ctx context.Context, did syntax.DID, sessionID string, fn func(*indigooauth.ClientSession) error) error
}

// Write is a write into a linked account's repository.
type Write struct {
	// Repo is the account's DID.
	Repo string
	// Action is ActionCreate, ActionUpdate (putRecord, which creates the
	// record when it does not exist) or ActionDelete.
	Action     string
	Collection string
	// RKey names the record; "" lets the PDS choose (ActionCreate only).
	RKey string
	// Record is the record's JSON; nil for deletes.
	Record json.RawMessage
	// ActorDID is who caused the write (the script's caller), and Trigger
	// the script that made it: both go to the event log.
	ActorDID string
	Trigger  string
}

// ScriptWrite is the Write a script asks for (script.LinkedWrite), made
// for actorDID (the script's caller) by trigger (the script).
func ScriptWrite(w script.LinkedWrite, actorDID, trigger string) Write {
	lw := Write{Repo: w.Repo, Action: ActionCreate, Collection: w.Collection, RKey: w.RKey, Record: w.Record,
		ActorDID: actorDID, Trigger: trigger}
	switch {
	case w.Delete:
		lw.Action, lw.Record = ActionDelete, nil
	case w.Update:
		lw.Action = ActionUpdate
	}
	return lw
}

// Written is the PDS's answer to a write.
type Written struct {
	URI string
	CID string // "" for deletes
	Rev string // the repository revision of the commit, when the PDS sent it
}

// GrantFor returns the grant bound to did, or a 404.
func (s *Service) GrantFor(ctx context.Context, did string) (storage.LinkedRepoGrant, error) {
	grants, err := s.List(ctx)
	if err != nil {
		return storage.LinkedRepoGrant{}, err
	}
	for _, g := range grants {
		if g.DID == did {
			return g, nil
		}
	}
	return storage.LinkedRepoGrant{}, fail.Newf(fail.NotFound, "no linked repo grant for %s", did)
}

// Write makes w in the account's repository through its grant's session.
// It is refused unless the grant is active and its scopes cover the
// collection and action (Covers). The PDS's refusal comes back as an
// error naming its status and message; a session whose tokens can no
// longer be refreshed moves the grant to needs_reauth, as the background
// refresher would. Successful and failed writes go to the event log.
func (s *Service) Write(ctx context.Context, sessions Sessions, w Write) (Written, error) {
	if err := checkWrite(w); err != nil {
		return Written{}, err
	}
	g, err := s.GrantFor(ctx, w.Repo)
	if err != nil {
		return Written{}, err
	}
	if g.Status != storage.LinkedRepoActive {
		return Written{}, fail.Newf(fail.Forbidden, "the linked repo grant for %s is %s, not active", w.Repo, g.Status)
	}
	if !Covers(g.Scopes, w.Collection, w.Action) {
		return Written{}, fail.Newf(fail.Forbidden, "the grant's scopes do not allow %s in %s", w.Action, w.Collection)
	}
	stored, err := s.opt.Store.GetLinkedRepoSession(ctx, g.ID)
	if err != nil {
		return Written{}, fmt.Errorf("the grant's session: %w", err)
	}
	var out Written
	var resumed bool
	err = sessions.WithSession(ctx, syntax.DID(g.DID), stored.Sealed, func(sess *indigooauth.ClientSession) error {
		resumed = true
		out, err = post(ctx, sess.APIClient(), w)
		return err
	})
	if !resumed && err != nil {
		return Written{}, fmt.Errorf("resume the grant's session: %w", err)
	}
	if err != nil {
		s.writeFailed(ctx, g, w, err)
		return Written{}, err
	}
	detail := map[string]string{"did": g.DID, "action": w.Action, "collection": w.Collection, "uri": out.URI, "trigger": w.Trigger}
	if out.CID != "" {
		detail["cid"] = out.CID
	}
	s.audit(context.WithoutCancel(ctx), eventlog.Entry{Type: "linked_repo.write", ActorDID: w.ActorDID, Subject: g.ID, Detail: detail})
	return out, nil
}

// checkWrite checks a write's fields before anything is looked up.
func checkWrite(w Write) error {
	if _, err := syntax.ParseDID(w.Repo); err != nil {
		return fail.Newf(fail.Invalid, "repo %q is not a DID", w.Repo)
	}
	if _, err := syntax.ParseNSID(w.Collection); err != nil {
		return fail.Newf(fail.Invalid, "collection %q is not an NSID", w.Collection)
	}
	if w.RKey != "" {
		if _, err := syntax.ParseRecordKey(w.RKey); err != nil {
			return fail.Newf(fail.Invalid, "rkey %q is not a record key", w.RKey)
		}
	}
	switch w.Action {
	case ActionCreate:
	case ActionUpdate, ActionDelete:
		if w.RKey == "" {
			return fail.Newf(fail.Invalid, "%s needs an rkey", w.Action)
		}
	default:
		return fail.Newf(fail.Invalid, "unknown write action %q", w.Action)
	}
	if w.Action != ActionDelete && len(w.Record) == 0 {
		return fail.New(fail.Invalid, "the record is missing")
	}
	return nil
}

// repoOutput is the part of createRecord, putRecord and deleteRecord
// answers a write reports.
type repoOutput struct {
	URI    string `json:"uri"`
	CID    string `json:"cid"`
	Commit *struct {
		Rev string `json:"rev"`
	} `json:"commit"`
}

// post sends w to the PDS as com.atproto.repo.createRecord, putRecord or
// deleteRecord.
func post(ctx context.Context, c *atclient.APIClient, w Write) (Written, error) {
	body := map[string]any{"repo": w.Repo, "collection": w.Collection}
	if w.RKey != "" {
		body["rkey"] = w.RKey
	}
	if w.Action != ActionDelete {
		body["record"] = w.Record
	}
	endpoint := map[string]syntax.NSID{
		ActionCreate: "com.atproto.repo.createRecord",
		ActionUpdate: "com.atproto.repo.putRecord",
		ActionDelete: "com.atproto.repo.deleteRecord",
	}[w.Action]
	var out repoOutput
	if err := c.Post(ctx, endpoint, body, &out); err != nil {
		return Written{}, pdsError(err)
	}
	res := Written{URI: out.URI, CID: out.CID}
	if w.Action == ActionDelete {
		res.URI = "at://" + w.Repo + "/" + w.Collection + "/" + w.RKey
	}
	if out.Commit != nil {
		res.Rev = out.Commit.Rev
	}
	return res, nil
}

// errReauth marks a write that failed because the session's tokens could
// not be refreshed.
var errReauth = errors.New("the session could not be refreshed")

// pdsError describes a failed call: the PDS's XRPC error, or a session
// that could not be refreshed.
func pdsError(err error) error {
	var ae *atclient.APIError
	if errors.As(err, &ae) {
		msg := ae.Name
		if ae.Message != "" {
			msg += ": " + ae.Message
		}
		return fmt.Errorf("the PDS answered %d: %s", ae.StatusCode, strings.TrimPrefix(msg, ": "))
	}
	// indigo's session refreshes expired tokens itself and reports a
	// refused refresh as "token refresh failed".
	if strings.Contains(err.Error(), "token refresh failed") {
		return fmt.Errorf("%w: %w", errReauth, err)
	}
	return fmt.Errorf("calling the PDS failed: %w", err)
}

// writeFailed records a failed write, and moves the grant to needs_reauth
// when its session could not be refreshed.
func (s *Service) writeFailed(ctx context.Context, g storage.LinkedRepoGrant, w Write, cause error) {
	ctx = context.WithoutCancel(ctx)
	s.audit(ctx, eventlog.Entry{Type: "linked_repo.write_failed", Severity: eventlog.Warn, ActorDID: w.ActorDID, Subject: g.ID,
		Detail: map[string]string{"did": g.DID, "action": w.Action, "collection": w.Collection, "rkey": w.RKey,
			"trigger": w.Trigger, "error": cause.Error()}})
	if errors.Is(cause, errReauth) {
		// The grant may have moved on since; MarkNeedsReauth refuses a
		// pending one and keeps a needs_reauth one.
		_ = s.MarkNeedsReauth(ctx, g.ID, cause)
	}
}
