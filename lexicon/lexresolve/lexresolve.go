// Package lexresolve resolves an NSID to the lexicon its authority
// publishes, as atproto specifies lexicon resolution: the NSID's authority
// domain (every segment but the name, reversed) → the DNS TXT record at
// `_lexicon.<authority>` → its `did=<DID>` → the DID document → the
// account's PDS → com.atproto.repo.getRecord of the record
// com.atproto.lexicon.schema/<NSID> → a lexicon document checked like an
// uploaded one (lexicon.Parse, with an `id` equal to the NSID).
//
// The authority step (DNS and the DID document) is cached with a TTL, its
// failures briefly; schemas are fetched afresh every time. Every HTTP call
// goes through the client it is given (the guarded one).
package lexresolve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"
)

// SchemaCollection is the collection lexicon schemas are published in.
const SchemaCollection = "com.atproto.lexicon.schema"

// Step names a stage of resolution; an Error says which one failed.
type Step string

// The stages of resolution, in order.
const (
	StepNSID    Step = "nsid"    // the NSID does not parse
	StepDNS     Step = "dns"     // the _lexicon TXT record
	StepDID     Step = "did"     // the DID document
	StepPDS     Step = "pds"     // the DID document names no usable PDS
	StepRecord  Step = "record"  // getRecord of the schema
	StepLexicon Step = "lexicon" // the schema is not a valid lexicon for the NSID
)

// Error is a resolution failure: the step that failed, whether the cause
// is upstream (a network failure or a server error, worth retrying) or a
// definitive answer (no such record, a malformed schema), and a message
// safe to show an operator.
type Error struct {
	Step     Step
	NSID     string
	Upstream bool
	// Missing is set when the authority's repository holds no schema
	// record for the NSID (it was never published, or was deleted).
	Missing bool
	Msg     string
	Err     error
}

func (e *Error) Error() string {
	s := fmt.Sprintf("resolving %s: %s: %s", e.NSID, e.Step, e.Msg)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// AsError returns err's *Error, if it is (or wraps) one.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// Authority is where an NSID's authority leads: its domain, the DID its
// _lexicon TXT record names and that DID's identity (document, PDS).
type Authority struct {
	Domain   string
	DID      string
	Identity *identity.Identity
}

// PDS is the authority DID's PDS endpoint ("" when its document names none).
func (a Authority) PDS() string {
	if a.Identity == nil {
		return ""
	}
	return a.Identity.PDSEndpoint()
}

// Schema is a lexicon fetched from its authority's repository.
type Schema struct {
	Authority Authority
	// URI and CID name the record the schema was read from.
	URI, CID string
	// Document is the lexicon document: the record without its $type.
	Document json.RawMessage
}

// Resolver is the whole resolver: authorities (cached) and schemas
// (fetched afresh). appview.Config.Network.LexiconResolver replaces it in tests or for
// embedders with their own resolution.
type Resolver interface {
	// Authority resolves the NSID's authority to its DID and identity.
	Authority(ctx context.Context, nsid string) (Authority, error)
	// Schema fetches the NSID's lexicon from its authority's repository
	// and checks it is a lexicon whose id is the NSID.
	Schema(ctx context.Context, nsid string) (Schema, error)
}

// TXTResolver looks up TXT records (*net.Resolver is one).
type TXTResolver interface {
	LookupTXT(ctx context.Context, name string) ([]string, error)
}

// NewTXTResolver returns a resolver asking the DNS server at addr
// (host:port) over UDP, falling back to TCP as usual; addr "" is the
// system resolver.
func NewTXTResolver(addr string) TXTResolver {
	if addr == "" {
		return net.DefaultResolver
	}
	var d net.Dialer
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}}
}

// AuthorityDomain returns the authority domain of an NSID: every segment
// but the last (the name), reversed and lower-cased.
func AuthorityDomain(nsid string) (string, error) {
	n, err := syntax.ParseNSID(nsid)
	if err != nil {
		return "", &Error{Step: StepNSID, NSID: nsid, Msg: "not a valid NSID"}
	}
	return strings.ToLower(n.Authority()), nil
}

// didFromTXT picks the one DID of a _lexicon TXT record set: entries of
// the form did=<DID>; other entries are ignored; none, several distinct
// ones, or one that is not a DID are errors.
func didFromTXT(records []string) (string, error) {
	var dids []string
	for _, r := range records {
		r = strings.TrimSpace(r)
		if v, ok := strings.CutPrefix(r, "did="); ok && !slices.Contains(dids, v) {
			dids = append(dids, v)
		}
	}
	switch len(dids) {
	case 0:
		return "", errors.New("no did= entry in the TXT record")
	case 1:
	default:
		return "", fmt.Errorf("%d different did= entries in the TXT records", len(dids))
	}
	if _, err := syntax.ParseDID(dids[0]); err != nil {
		return "", fmt.Errorf("did= entry %q is not a DID", clip(dids[0]))
	}
	return dids[0], nil
}

// clip shortens an untrusted string for a message.
func clip(s string) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) > 128 {
		return s[:128] + "…"
	}
	return s
}

// resolveAuthority runs the DNS and DID steps, uncached.
func resolveAuthority(ctx context.Context, txt TXTResolver, dir identity.Directory, nsid string, timeout time.Duration) (Authority, error) {
	domain, err := AuthorityDomain(nsid)
	if err != nil {
		return Authority{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	name := "_lexicon." + domain
	records, err := txt.LookupTXT(ctx, name)
	if err != nil {
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
			return Authority{}, &Error{Step: StepDNS, NSID: nsid, Msg: "no TXT record at " + name}
		}
		return Authority{}, &Error{Step: StepDNS, NSID: nsid, Upstream: true, Msg: "looking up TXT " + name + " failed", Err: err}
	}
	did, err := didFromTXT(records)
	if err != nil {
		return Authority{}, &Error{Step: StepDNS, NSID: nsid, Msg: "TXT " + name + ": " + err.Error()}
	}
	ident, err := dir.LookupDID(ctx, syntax.DID(did))
	if err != nil {
		upstream := !errors.Is(err, identity.ErrDIDNotFound)
		return Authority{}, &Error{Step: StepDID, NSID: nsid, Upstream: upstream, Msg: "DID " + did + " does not resolve", Err: err}
	}
	return Authority{Domain: domain, DID: did, Identity: ident}, nil
}
