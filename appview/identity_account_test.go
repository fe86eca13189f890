package appview_test

import (
	"context"
	"strings"
	"testing"

	"github.com/bluesky-social/indigo/atproto/atcrypto"
	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/testing/refpds"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// twoDirectories resolves at first, then at second: the test's admins live
// in a stand-in directory, the attached account at the reference PLC.
type twoDirectories struct{ first, second identity.Directory }

func (d twoDirectories) LookupHandle(ctx context.Context, h syntax.Handle) (*identity.Identity, error) {
	if id, err := d.first.LookupHandle(ctx, h); err == nil {
		return id, nil
	}
	return d.second.LookupHandle(ctx, h)
}

func (d twoDirectories) LookupDID(ctx context.Context, did syntax.DID) (*identity.Identity, error) {
	if id, err := d.first.LookupDID(ctx, did); err == nil {
		return id, nil
	}
	return d.second.LookupDID(ctx, did)
}

func (d twoDirectories) Lookup(ctx context.Context, atid syntax.AtIdentifier) (*identity.Identity, error) {
	if id, err := d.first.Lookup(ctx, atid); err == nil {
		return id, nil
	}
	return d.second.Lookup(ctx, atid)
}

func (d twoDirectories) Purge(ctx context.Context, atid syntax.AtIdentifier) error {
	_ = d.first.Purge(ctx, atid)
	return d.second.Purge(ctx, atid)
}

// TestAttachAccountIdentity attaches an account of the reference PDS as
// the instance's identity and adds the instance's #atproto_label key to
// the account's DID document through the PDS: request a confirmation code
// (the PDS "e-mails" it; the test reads it from the PDS's mailer), then
// have the PDS sign and submit the operation. The reference PLC directory
// then serves the new key beside the account's own.
func TestAttachAccountIdentity(t *testing.T) {
	t.Parallel()
	n := refpds.Start(t)
	ctx := context.Background()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		acct := n.CreateAccount(t, "attach-"+t.Name()[strings.LastIndexByte(t.Name(), '/')+1:])
		env := plcEnv(t, open(t), n.PLCURL, appview.Config{PublicURL: "https://example.com"})
		admin := env.Bootstrap(t)
		before, _ := resolvePLC(t, n.PLCURL, acct.DID)

		label, _ := atcrypto.GeneratePrivateKeyP256()
		labelPub, _ := label.PublicKey()
		expect(t, admin.Do(t, "POST", "/admin/verification-methods", map[string]any{"fragment_id": "atproto_label", "public_key_multibase": labelPub.Multibase()}), 201, "")
		expect(t, admin.Do(t, "POST", "/admin/verification-methods", map[string]any{"fragment_id": "atproto", "generate": true, "key_type": "secp256k1"}), 201, "")
		expect(t, admin.Do(t, "POST", "/admin/service-entries", map[string]any{"fragment_id": "#atproto_labeler", "service_type": "AtprotoLabeler"}), 201, "")

		for _, c := range []struct {
			body map[string]any
			msg  string
		}{
			{map[string]any{}, "the attach_account mode needs an account: give identifier and password"},
			{map[string]any{"identifier": acct.DID}, "attaching an account needs identifier (a handle or DID) and password"},
			{map[string]any{"identifier": "not an identifier", "password": "x"}, "invalid identifier: a handle or a DID is expected"},
			{map[string]any{"identifier": acct.DID, "password": "wrong"}, "signing in to the account's PDS failed: AuthenticationRequired: Invalid identifier or password"},
			{map[string]any{"identifier": acct.DID, "password": acct.Password, "create": true}, "create, did and rotation_key belong to the did_plc mode"},
		} {
			c.body["mode"] = "attach_account"
			expect(t, admin.Do(t, "PUT", "/admin/service-identity", c.body), 400, c.msg)
		}
		expect(t, admin.Do(t, "POST", "/admin/service-entries/sync-plc/request", nil), 400,
			"wrong identity mode for PLC sync: sync-plc/request and sync-plc/submit need the attach_account mode")

		r := admin.Do(t, "PUT", "/admin/service-identity", map[string]any{"mode": "attach_account", "identifier": acct.DID, "password": acct.Password})
		expect(t, r, 200, "")
		if o := r.Object(t); o["did"] != acct.DID || o["account_handle"] != acct.Handle || o["account_pds"] != n.PDSPublicURL || o["document_url"] != nil {
			t.Fatalf("attached: %s", r.Raw)
		}
		if got := env.App.InstanceDID(ctx); got != acct.DID {
			t.Fatalf("InstanceDID %q", got)
		}
		expect(t, admin.Do(t, "POST", "/admin/service-entries/sync-plc", nil), 400,
			"wrong identity mode for PLC sync: sync-plc needs the did_plc mode and a configured DID")
		expect(t, admin.Do(t, "POST", "/admin/service-entries/sync-plc/submit", map[string]any{}), 400,
			"token is required (the confirmation code the PDS e-mailed)")
		r = admin.Do(t, "POST", "/admin/service-entries/sync-plc/submit", map[string]any{"token": "WRONG-TOKEN"})
		if r.Status != 400 || r.Error(t) == "" {
			t.Fatalf("a wrong token: %d %s", r.Status, r.Raw)
		}

		expect(t, admin.Do(t, "POST", "/admin/service-entries/sync-plc/request", nil), 204, "")
		token := n.PLCToken(t, acct.Email)
		expect(t, admin.Do(t, "POST", "/admin/service-entries/sync-plc/submit", map[string]any{"token": token}), 204, "")
		after, services := resolvePLC(t, n.PLCURL, acct.DID)
		if after["#atproto_label"] != labelPub.Multibase() || after["#atproto"] != before["#atproto"] || len(after) != 2 {
			t.Fatalf("keys after the PDS-signed operation: %v (before %v)", after, before)
		}
		if services["#atproto_pds AtprotoPersonalDataServer"] != n.PDSPublicURL || services["#atproto_labeler AtprotoLabeler"] != "https://example.com" {
			t.Fatalf("services after the PDS-signed operation: %v", services)
		}
		// The code is single-use.
		r = admin.Do(t, "POST", "/admin/service-entries/sync-plc/submit", map[string]any{"token": token})
		if r.Status != 400 {
			t.Fatalf("a used token: %d %s", r.Status, r.Raw)
		}

		expect(t, admin.Do(t, "PUT", "/admin/service-identity", map[string]any{"mode": "did_web"}), 200, "")
		r = admin.Do(t, "PUT", "/admin/service-identity", map[string]any{"mode": "attach_account"})
		expect(t, r, 200, "")
		if r.Object(t)["did"] != acct.DID {
			t.Fatalf("switching back: %s", r.Raw)
		}
	})
}
