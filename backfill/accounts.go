package backfill

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"
)

// MaxAccounts is the most accounts one backfill request may name.
const MaxAccounts = 500

// RequestError is a backfill request refused as invalid (an HTTP 400).
type RequestError struct {
	Message string
	// Unresolvable lists the accounts that did not resolve, as given.
	Unresolvable []string
}

func (e *RequestError) Error() string { return e.Message }

// resolveTimeout bounds the resolution of one account.
const resolveTimeout = 15 * time.Second

// resolveConcurrency bounds parallel account resolutions.
const resolveConcurrency = 16

// normalizeAccounts trims the entries, drops blanks and duplicates (a
// handle's case and leading "@" do not matter), keeping the first order.
func normalizeAccounts(entries []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		key := e
		if !strings.HasPrefix(e, "did:") {
			key = strings.ToLower(strings.TrimPrefix(e, "@"))
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, e)
	}
	return out
}

// resolveAccounts turns DIDs and handles into DIDs whose documents name a
// PDS. It returns the DIDs (duplicates removed, in order) and the entries
// that did not resolve.
func resolveAccounts(ctx context.Context, dir identity.Directory, entries []string) (dids, unresolvable []string) {
	results := make([]string, len(entries))
	sem := make(chan struct{}, resolveConcurrency)
	var wg sync.WaitGroup
	for i, e := range entries {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			did, err := resolveAccount(ctx, dir, e)
			if err == nil {
				results[i] = did
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, did := range results {
		switch {
		case did == "":
			unresolvable = append(unresolvable, entries[i])
		case !seen[did]:
			seen[did] = true
			dids = append(dids, did)
		}
	}
	return dids, unresolvable
}

// resolveAccount resolves one DID or handle to a DID hosted on a PDS.
func resolveAccount(ctx context.Context, dir identity.Directory, entry string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	var ident *identity.Identity
	if strings.HasPrefix(entry, "did:") {
		did, err := syntax.ParseDID(entry)
		if err != nil {
			return "", err
		}
		if ident, err = dir.LookupDID(ctx, did); err != nil {
			return "", err
		}
	} else {
		h, err := syntax.ParseHandle(strings.TrimPrefix(entry, "@"))
		if err != nil {
			return "", err
		}
		if ident, err = dir.LookupHandle(ctx, h.Normalize()); err != nil {
			return "", err
		}
	}
	if ident.PDSEndpoint() == "" {
		return "", fmt.Errorf("%s: no PDS in the DID document", entry)
	}
	return ident.DID.String(), nil
}
