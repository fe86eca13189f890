package serviceid

import (
	"context"
	"encoding/json"
	"errors"
	"maps"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/core/plc"
)

// The settings holding the attach_account identity (reserved).
const (
	AccountDIDSetting     = "identity.account.did"
	AccountSessionSetting = "identity.account.session" // sealed accountSession
)

// accountSessionPurpose binds the sealed session to its use.
const accountSessionPurpose = "identity:account-session"

// AccountRequest is what PUT /admin/service-identity carries for
// attach_account: the account (handle or DID) and its password, used once
// to open a session and never stored; AuthFactorToken when the PDS asks
// for a second factor.
type AccountRequest struct {
	Identifier      string
	Password        string
	AuthFactorToken string
}

// accountSession is the stored session with the attached account's PDS.
type accountSession struct {
	DID     string `json:"did"`
	Handle  string `json:"handle"`
	PDS     string `json:"pds"`
	Access  string `json:"access"`
	Refresh string `json:"refresh"`
}

// setAccount attaches the account req names: its PDS is resolved from its
// DID document, a session opened with the password and kept sealed. With
// an empty request, the account attached before is kept.
func (s *Service) setAccount(ctx context.Context, actor string, req AccountRequest) error {
	if req == (AccountRequest{}) {
		if did, err := s.setting(ctx, AccountDIDSetting); err != nil || did != "" {
			return err
		}
		return fail.New(fail.Invalid, "the attach_account mode needs an account: give identifier and password")
	}
	if req.Identifier == "" || req.Password == "" {
		return fail.New(fail.Invalid, "attaching an account needs identifier (a handle or DID) and password")
	}
	if s.opt.Directory == nil || s.opt.HTTP == nil {
		return fail.New(fail.Unavailable, "identity resolution is not configured")
	}
	atid, err := syntax.ParseAtIdentifier(req.Identifier)
	if err != nil {
		return fail.New(fail.Invalid, "invalid identifier: a handle or a DID is expected")
	}
	ident, err := s.opt.Directory.Lookup(ctx, atid)
	if err != nil {
		return fail.Wrap(fail.Invalid, "the account could not be resolved: "+err.Error(), err)
	}
	if ident.DID.Method() != "plc" {
		return fail.New(fail.Invalid, "only an account with a did:plc can be attached (PLC sync changes its document)")
	}
	pds := ident.PDSEndpoint()
	if pds == "" {
		return fail.New(fail.Invalid, "the account's DID document names no PDS")
	}
	in := map[string]string{"identifier": ident.DID.String(), "password": req.Password}
	if req.AuthFactorToken != "" {
		in["authFactorToken"] = req.AuthFactorToken
	}
	var out struct {
		DID        string `json:"did"`
		Handle     string `json:"handle"`
		AccessJwt  string `json:"accessJwt"`
		RefreshJwt string `json:"refreshJwt"`
	}
	if err := s.xrpc(ctx, pds, "com.atproto.server.createSession", "", in, &out); err != nil {
		return pdsFailure("signing in to the account's PDS failed", err)
	}
	if out.DID != ident.DID.String() {
		return fail.Invalidf("the PDS signed in %s, not %s", out.DID, ident.DID)
	}
	sess := accountSession{DID: out.DID, Handle: out.Handle, PDS: pds, Access: out.AccessJwt, Refresh: out.RefreshJwt}
	if err := s.storeSession(ctx, sess); err != nil {
		return err
	}
	if err := s.opt.Store.PutSetting(ctx, AccountDIDSetting, sess.DID); err != nil {
		return err
	}
	s.opt.Events.Record(ctx, eventlog.Entry{Type: "identity.account_attached", ActorDID: actor, Subject: sess.DID,
		Detail: map[string]any{"pds": pds}})
	return nil
}

func (s *Service) storeSession(ctx context.Context, sess accountSession) error {
	if s.opt.Sealer == nil {
		return errNoSealer
	}
	raw, err := json.Marshal(sess)
	if err != nil {
		return err
	}
	sealed, err := s.opt.Sealer.Seal(accountSessionPurpose, raw)
	if err != nil {
		return err
	}
	return s.opt.Store.PutSetting(ctx, AccountSessionSetting, sealed)
}

func (s *Service) session(ctx context.Context) (accountSession, error) {
	sealed, err := s.setting(ctx, AccountSessionSetting)
	if err != nil {
		return accountSession{}, err
	}
	if sealed == "" {
		return accountSession{}, fail.New(fail.Invalid, "no account session is stored: attach the account again")
	}
	if s.opt.Sealer == nil {
		return accountSession{}, errNoSealer
	}
	raw, err := s.opt.Sealer.Open(accountSessionPurpose, sealed)
	if err != nil {
		return accountSession{}, err
	}
	var sess accountSession
	return sess, json.Unmarshal(raw, &sess)
}

// errWrongModeForAccountSync is the 400 of sync-plc/request and submit
// outside attach_account.
var errWrongModeForAccountSync = fail.New(fail.Invalid, "wrong identity mode for PLC sync: sync-plc/request and sync-plc/submit need the attach_account mode")

// accountCall runs an XRPC call as the attached account, refreshing the
// session once when the PDS says the access token expired.
func (s *Service) accountCall(ctx context.Context, nsid string, in, out any) error {
	id, err := s.Get(ctx)
	if err != nil {
		return err
	}
	if id.Mode != ModeAttachAccount {
		return errWrongModeForAccountSync
	}
	sess, err := s.session(ctx)
	if err != nil {
		return err
	}
	err = s.xrpc(ctx, sess.PDS, nsid, sess.Access, in, out)
	var xerr *xrpcError
	if !errors.As(err, &xerr) || xerr.Code != "ExpiredToken" {
		return err
	}
	var fresh struct {
		AccessJwt  string `json:"accessJwt"`
		RefreshJwt string `json:"refreshJwt"`
	}
	if err := s.xrpc(ctx, sess.PDS, "com.atproto.server.refreshSession", sess.Refresh, nil, &fresh); err != nil {
		return pdsFailure("the account's session could not be refreshed (attach the account again)", err)
	}
	sess.Access, sess.Refresh = fresh.AccessJwt, fresh.RefreshJwt
	if err := s.storeSession(ctx, sess); err != nil {
		return err
	}
	return s.xrpc(ctx, sess.PDS, nsid, sess.Access, in, out)
}

// RequestPLCToken asks the attached account's PDS to e-mail its owner a
// confirmation code for a PLC operation.
func (s *Service) RequestPLCToken(ctx context.Context, actor string) error {
	if err := s.accountCall(ctx, "com.atproto.identity.requestPlcOperationSignature", nil, nil); err != nil {
		return pdsFailure("the PDS refused to send a PLC confirmation code", err)
	}
	s.opt.Events.Record(ctx, eventlog.Entry{Type: "identity.plc_token_requested", ActorDID: actor, Subject: s.DID(ctx)})
	return nil
}

// SubmitAccountPLC has the attached account's PDS sign, with the
// confirmation code token, an operation that adds or replaces the
// configured verification methods and services in the account's DID
// document, and submit it. The account's own #atproto key and
// #atproto_pds service are never changed, and nothing is removed.
func (s *Service) SubmitAccountPLC(ctx context.Context, actor, token string) error {
	if token == "" {
		return fail.New(fail.Invalid, "token is required (the confirmation code the PDS e-mailed)")
	}
	id, err := s.Get(ctx)
	if err != nil {
		return err
	}
	if id.Mode != ModeAttachAccount {
		return errWrongModeForAccountSync
	}
	current, err := s.opt.PLC.State(ctx, id.DID)
	if err != nil {
		return plcFailure(err)
	}
	want, err := s.desiredState(ctx)
	if err != nil {
		return err
	}
	methods, services := maps.Clone(current.VerificationMethods), maps.Clone(current.Services)
	if methods == nil {
		methods = map[string]string{}
	}
	if services == nil {
		services = map[string]plc.Service{}
	}
	for k, v := range want.VerificationMethods {
		if k != "atproto" {
			methods[k] = v
		}
	}
	for k, v := range want.Services {
		if k != "atproto_pds" {
			services[k] = v
		}
	}
	var signed struct {
		Operation json.RawMessage `json:"operation"`
	}
	in := map[string]any{"token": token, "verificationMethods": methods, "services": services}
	if err := s.accountCall(ctx, "com.atproto.identity.signPlcOperation", in, &signed); err != nil {
		return pdsFailure("the PDS refused to sign the PLC operation", err)
	}
	if err := s.accountCall(ctx, "com.atproto.identity.submitPlcOperation", map[string]any{"operation": signed.Operation}, nil); err != nil {
		return pdsFailure("the PDS refused to submit the PLC operation", err)
	}
	s.opt.Events.Record(ctx, eventlog.Entry{Type: "identity.plc_synced", ActorDID: actor, Subject: id.DID,
		Detail: map[string]any{"verification_methods": len(methods), "services": len(services), "through": "pds"}})
	return nil
}
