package appview

import (
	"context"
	"errors"

	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"
)

// directoryIdentities adapts an indigo identity.Directory to the lookups
// the HTTP surfaces need.
type directoryIdentities struct{ dir identity.Directory }

func (d directoryIdentities) ResolveHandle(ctx context.Context, h syntax.Handle) (syntax.DID, error) {
	ident, err := d.dir.LookupHandle(ctx, h)
	if err != nil {
		return "", err
	}
	return ident.DID, nil
}

func (d directoryIdentities) PDSEndpoint(ctx context.Context, did syntax.DID) (string, error) {
	ident, err := d.dir.LookupDID(ctx, did)
	if err != nil {
		return "", err
	}
	if pds := ident.PDSEndpoint(); pds != "" {
		return pds, nil
	}
	return "", errors.New("DID document declares no PDS")
}
