package linkedrepos

import (
	"slices"
	"strings"

	"github.com/bluesky-social/indigo/atproto/auth"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/fail"
)

// MaxScopesLength bounds a grant's scope string.
const MaxScopesLength = 4096

// transitional are the scopes atproto defined before granular
// permissions; PDSes still grant them.
var transitional = map[string]bool{
	"transition:generic":   true,
	"transition:chat.bsky": true,
	"transition:email":     true,
}

// NormalizeScopes checks a whitespace-separated scope string and returns
// it in canonical form: the scopes in the order given, separated by one
// space, without repeats, with `atproto` first (added when missing: a
// grant always carries it). Every other scope must be a transitional
// scope or a permission indigo's atproto/auth parser accepts
// (ParsePermissionString: repo:, rpc:, blob:, account:, identity:,
// include:); anything else is a 400, and an invalid NSID in a `repo:`
// scope is reported as such.
func NormalizeScopes(raw string) (string, error) {
	if len(raw) > MaxScopesLength {
		return "", fail.Invalidf("scopes must be at most %d characters", MaxScopesLength)
	}
	fields := strings.Fields(raw)
	if len(fields) == 0 {
		return "", fail.New(fail.Invalid, "scopes is required")
	}
	out := []string{"atproto"}
	seen := map[string]bool{"atproto": true}
	for _, s := range fields {
		if seen[s] {
			continue
		}
		seen[s] = true
		if err := checkScope(s); err != nil {
			return "", err
		}
		out = append(out, s)
	}
	return strings.Join(out, " "), nil
}

// checkScope checks one scope other than `atproto`.
func checkScope(s string) error {
	if transitional[s] {
		return nil
	}
	if _, err := auth.ParsePermissionString(s); err != nil {
		if nsid, bad := badRepoNSID(s); bad {
			return fail.Invalidf("invalid NSID %q in scope %q", nsid, s)
		}
		return fail.Invalidf("malformed scope %q", s)
	}
	return nil
}

// badRepoNSID reports the first collection of a `repo:` scope that is
// neither `*` nor a valid NSID.
func badRepoNSID(s string) (string, bool) {
	g, err := auth.ParseGenericScope(s)
	if err != nil || g.Resource != "repo" {
		return "", false
	}
	colls := g.Params["collection"]
	if g.Positional != "" {
		colls = append(colls, g.Positional)
	}
	for _, c := range colls {
		if c == "*" {
			continue
		}
		if _, err := syntax.ParseNSID(c); err != nil {
			return c, true
		}
	}
	return "", false
}

// Repository write actions, as atproto's `repo:` permission names them.
const (
	ActionCreate = "create"
	ActionUpdate = "update"
	ActionDelete = "delete"
)

// Covers reports whether a grant's scope string allows action (ActionCreate,
// ActionUpdate or ActionDelete) on records of collection: a
// `transition:generic` scope allows every repository write; a `repo:`
// permission allows the collections it names (or `*`, every collection)
// with the actions it names (every action when it names none). Other
// scopes, `include:` permission sets among them, allow no write here: a
// set's contents are only known to the PDS that expands it.
func Covers(scopes, collection, action string) bool {
	for _, s := range strings.Fields(scopes) {
		if s == "transition:generic" {
			return true
		}
		p, err := auth.ParsePermissionString(s)
		if err != nil || p.Resource != "repo" {
			continue
		}
		if (len(p.Action) == 0 || slices.Contains(p.Action, action)) &&
			(slices.Contains(p.Collection, "*") || slices.Contains(p.Collection, collection)) {
			return true
		}
	}
	return false
}
