// Package profiles is the service behind app.social.actor.getProfile: an
// actor (a DID or a handle) resolved through the identity directory, and
// its profile record read from its PDS.
package profiles

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/internal/netguard"
)

// profileCollection and profileRKey locate an account's profile record.
const (
	profileCollection = "app.bsky.actor.profile"
	profileRKey       = "self"
)

// Limits.
const (
	// DefaultTimeout bounds the profile look-up on the PDS.
	DefaultTimeout = 5 * time.Second
	// DefaultMaxResponse bounds the PDS's getRecord answer.
	DefaultMaxResponse = 1 << 20
)

// Directory resolves actors.
type Directory interface {
	LookupHandle(ctx context.Context, h syntax.Handle) (*identity.Identity, error)
	LookupDID(ctx context.Context, did syntax.DID) (*identity.Identity, error)
}

// Service looks profiles up.
type Service struct {
	dir         Directory
	http        *http.Client
	timeout     time.Duration
	maxResponse int64
	log         *slog.Logger
}

// Options configure a Service.
type Options struct {
	// Directory resolves actors.
	Directory Directory
	// HTTPClient reads public records from PDSes; it must be a guarded
	// outbound client (default: one of internal/netguard's).
	HTTPClient *http.Client
	// Timeout bounds the look-up on the PDS (default DefaultTimeout);
	// MaxResponse bounds its answer (default DefaultMaxResponse).
	Timeout     time.Duration
	MaxResponse int64
	Logger      *slog.Logger // default slog.Default()
}

// New returns the service.
func New(opts Options) *Service {
	s := &Service{dir: opts.Directory, http: opts.HTTPClient, timeout: opts.Timeout, maxResponse: opts.MaxResponse, log: opts.Logger}
	if s.http == nil {
		s.http = netguard.NewClient(netguard.Options{}, 0) // Timeout bounds each look-up
	}
	if s.timeout <= 0 {
		s.timeout = DefaultTimeout
	}
	if s.maxResponse <= 0 {
		s.maxResponse = DefaultMaxResponse
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	return s
}

var (
	errInvalidActor  = fail.New(fail.Invalid, "invalid actor: expected a DID or a handle")
	errActorNotFound = fail.New(fail.NotFound, "actor not found")
	errActorNoPDS    = fail.New(fail.NotFound, "actor has no PDS")
	errResolveFailed = fail.New(fail.Upstream, "identity resolution failed")
	errProfileFetch  = fail.New(fail.Upstream, "fetching the profile from the PDS failed")
)

// Profile is an actor's profile. Absent values are empty strings.
type Profile struct {
	DID         string `json:"did"`
	Handle      string `json:"handle"`
	DisplayName string `json:"displayName"`
	Description string `json:"description"`
	AvatarURL   string `json:"avatarURL"`
}

// Get returns the profile of actor (a DID or a handle), from the identity
// directory and the actor's PDS. An unknown actor is NotFound; a failing
// PDS or directory Upstream.
func (s *Service) Get(ctx context.Context, actor string) (Profile, error) {
	ident, err := s.resolve(ctx, actor)
	if err != nil {
		return Profile{}, err
	}
	pds := strings.TrimRight(ident.PDSEndpoint(), "/")
	if pds == "" {
		return Profile{}, errActorNoPDS
	}
	p, err := s.fetch(ctx, pds, ident.DID)
	if err != nil {
		s.log.WarnContext(ctx, "profile look-up on the PDS failed", "did", ident.DID, "pds", pds, "err", err)
		return Profile{}, errProfileFetch
	}
	p.DID = ident.DID.String()
	p.Handle = handleOf(ident)
	return p, nil
}

// resolve looks actor up in the directory.
func (s *Service) resolve(ctx context.Context, actor string) (*identity.Identity, error) {
	atid, err := syntax.ParseAtIdentifier(actor)
	if err != nil {
		return nil, errInvalidActor
	}
	var ident *identity.Identity
	if did, derr := atid.AsDID(); derr == nil {
		ident, err = s.dir.LookupDID(ctx, did)
	} else {
		hdl, _ := atid.AsHandle()
		ident, err = s.dir.LookupHandle(ctx, hdl)
	}
	switch {
	case err == nil:
		return ident, nil
	case errors.Is(err, identity.ErrDIDNotFound), errors.Is(err, identity.ErrHandleNotFound),
		errors.Is(err, identity.ErrHandleResolutionFailed), errors.Is(err, identity.ErrHandleMismatch),
		errors.Is(err, identity.ErrHandleNotDeclared):
		return nil, errActorNotFound
	}
	s.log.WarnContext(ctx, "resolving an actor failed", "actor", actor, "err", err)
	return nil, errResolveFailed
}

// handleOf returns the identity's handle: the verified one when the
// directory verified it, else the one its DID document declares
// (alsoKnownAs), else "".
func handleOf(ident *identity.Identity) string {
	if ident.Handle != "" && ident.Handle != syntax.HandleInvalid {
		return ident.Handle.String()
	}
	if h, err := ident.DeclaredHandle(); err == nil {
		return h.String()
	}
	return ""
}

// fetch reads did's profile record from its PDS with the public
// com.atproto.repo.getRecord. A missing record is an empty profile.
func (s *Service) fetch(ctx context.Context, pds string, did syntax.DID) (Profile, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	q := url.Values{"repo": {did.String()}, "collection": {profileCollection}, "rkey": {profileRKey}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, pds+"/xrpc/com.atproto.repo.getRecord?"+q.Encode(), nil)
	if err != nil {
		return Profile{}, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		return Profile{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, s.maxResponse+1))
	if err != nil {
		return Profile{}, fmt.Errorf("read getRecord answer: %w", err)
	}
	if int64(len(body)) > s.maxResponse {
		return Profile{}, fmt.Errorf("getRecord answer exceeds %d bytes", s.maxResponse)
	}
	if resp.StatusCode != http.StatusOK {
		var xe struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(body, &xe)
		if (resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusNotFound) && xe.Error == "RecordNotFound" {
			return Profile{}, nil
		}
		return Profile{}, fmt.Errorf("getRecord answered %d %s", resp.StatusCode, xe.Error)
	}
	var rec struct {
		Value map[string]json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(body, &rec); err != nil {
		return Profile{}, fmt.Errorf("decode getRecord answer: %w", err)
	}
	p := Profile{DisplayName: stringField(rec.Value["displayName"]), Description: stringField(rec.Value["description"])}
	if cid := blobCID(rec.Value["avatar"]); cid != "" {
		p.AvatarURL = pds + "/xrpc/com.atproto.sync.getBlob?did=" + url.QueryEscape(did.String()) + "&cid=" + url.QueryEscape(cid)
	}
	return p, nil
}

// stringField returns a JSON string's value, or "" for anything else.
func stringField(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// blobCID returns the CID of a blob reference: {"$type": "blob", "ref":
// {"$link": CID}, ...} or the legacy {"cid": CID, ...}; "" when raw is no
// blob or the CID is malformed.
func blobCID(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b struct {
		Ref struct {
			Link string `json:"$link"`
		} `json:"ref"`
		CID string `json:"cid"`
	}
	if json.Unmarshal(raw, &b) != nil {
		return ""
	}
	cid := b.Ref.Link
	if cid == "" {
		cid = b.CID
	}
	if _, err := syntax.ParseCID(cid); err != nil {
		return ""
	}
	return cid
}
