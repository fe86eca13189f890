package lexicon

import "github.com/bluesky-social/indigo/atproto/syntax"

// Identifier checks with indigo's syntax rules (syntax.ParseDID,
// ParseNSID, ParseRecordKey, ParseCID), for code that checks every change
// it handles: the usual values pass a hand-written check (formats.go,
// which accepts a subset of what indigo accepts); anything else is
// decided, and its error worded, by indigo.

// CheckDID reports whether s is a DID, as syntax.ParseDID decides.
func CheckDID(s string) error { return check(s, fastDID, syntax.ParseDID) }

// CheckNSID reports whether s is an NSID, as syntax.ParseNSID decides.
func CheckNSID(s string) error { return check(s, fastNSID, syntax.ParseNSID) }

// CheckRecordKey reports whether s is a record key, as
// syntax.ParseRecordKey decides.
func CheckRecordKey(s string) error { return check(s, fastRecordKey, syntax.ParseRecordKey) }

// CheckCID reports whether s is a CID string, as syntax.ParseCID decides.
func CheckCID(s string) error { return check(s, fastCID, syntax.ParseCID) }

func check[T any](s string, fast func(string) bool, parse func(string) (T, error)) error {
	if fast(s) {
		return nil
	}
	_, err := parse(s)
	return err
}
