package linkedrepos

import (
	"strings"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/storage"
)

// Account is the account that completed an authorization, as the OAuth
// client established it: its DID and its verified handle ("" when it has
// none).
type Account struct {
	DID    string
	Handle string
}

// errWrongAccount refuses an authorization by an account the grant is not
// pinned to.
var errWrongAccount = fail.New(fail.Forbidden, "the account that authorized is not the one the grant is pinned to")

// CheckBinding reports whether acct may bind grant g: a grant that
// already has a DID (pinned to a DID, or authorized before) binds only
// that DID; a grant pinned to a handle binds only the account with that
// handle; an open grant binds any account. It is a pure rule: it reads
// nothing.
func CheckBinding(g storage.LinkedRepoGrant, acct Account) error {
	if _, err := syntax.ParseDID(acct.DID); err != nil {
		return fail.Invalidf("invalid DID %q", acct.DID)
	}
	switch {
	case g.DID != "":
		if acct.DID != g.DID {
			return errWrongAccount
		}
	case g.Handle != "":
		if acct.Handle == "" || !strings.EqualFold(acct.Handle, g.Handle) {
			return errWrongAccount
		}
	}
	return nil
}

// pinned normalises an optional `handle` field: "" for none, else a valid
// handle (lower-cased) or DID. It returns the DID too when it is one.
func pinned(raw string) (handle, did string, err error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", "", nil
	}
	id, err := syntax.ParseAtIdentifier(raw)
	if err != nil {
		return "", "", fail.Invalidf("handle must be a handle or a DID: %q", raw)
	}
	id = id.Normalize()
	if id.IsDID() {
		return id.String(), id.String(), nil
	}
	return id.String(), "", nil
}
