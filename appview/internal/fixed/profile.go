package fixed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/respond"
	"github.com/lexview/lexview/appview/internal/userauth"
)

// profileCollection and profileRKey locate an account's profile record.
const (
	profileCollection = "app.bsky.actor.profile"
	profileRKey       = "self"
)

// Error messages of getProfile.
const (
	msgAuthRequired  = "authentication required"
	msgInvalidActor  = "invalid actor: expected a DID or a handle"
	msgActorNotFound = "actor not found"
	msgActorNoPDS    = "actor has no PDS"
	msgResolveFailed = "identity resolution failed"
	msgProfileFetch  = "fetching the profile from the PDS failed"
)

// Profile is the answer of getProfile. Absent values are empty strings.
type Profile struct {
	DID         string `json:"did"`
	Handle      string `json:"handle"`
	DisplayName string `json:"displayName"`
	Description string `json:"description"`
	AvatarURL   string `json:"avatarURL"`
}

// getProfile answers GET /xrpc/app.social.actor.getProfile for an
// authenticated caller (any method): the profile of `actor` (a DID or a
// handle; default the caller), from the identity directory and the
// actor's PDS. An unknown actor is 404; a failing PDS or directory 502.
func (h *Handler) getProfile(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	caller := userauth.FromContext(ctx)
	if caller == nil {
		respond.Error(w, http.StatusUnauthorized, msgAuthRequired)
		return
	}
	actor := strings.TrimSpace(r.URL.Query().Get("actor"))
	if actor == "" {
		actor = caller.DID
	}
	ident, status, msg := h.resolve(ctx, actor)
	if status != 0 {
		respond.Error(w, status, msg)
		return
	}
	pds := strings.TrimRight(ident.PDSEndpoint(), "/")
	if pds == "" {
		respond.Error(w, http.StatusNotFound, msgActorNoPDS)
		return
	}
	p, err := h.fetchProfile(ctx, pds, ident.DID)
	if err != nil {
		h.log.WarnContext(ctx, "profile look-up on the PDS failed", "did", ident.DID, "pds", pds, "err", err)
		respond.Error(w, http.StatusBadGateway, msgProfileFetch)
		return
	}
	p.DID = ident.DID.String()
	p.Handle = handleOf(ident)
	respond.JSON(w, http.StatusOK, p)
}

// resolve looks actor up in the directory. On failure it returns the
// status and message to answer.
func (h *Handler) resolve(ctx context.Context, actor string) (*identity.Identity, int, string) {
	atid, err := syntax.ParseAtIdentifier(actor)
	if err != nil {
		return nil, http.StatusBadRequest, msgInvalidActor
	}
	var ident *identity.Identity
	if did, derr := atid.AsDID(); derr == nil {
		ident, err = h.dir.LookupDID(ctx, did)
	} else {
		hdl, _ := atid.AsHandle()
		ident, err = h.dir.LookupHandle(ctx, hdl)
	}
	switch {
	case err == nil:
		return ident, 0, ""
	case errors.Is(err, identity.ErrDIDNotFound), errors.Is(err, identity.ErrHandleNotFound),
		errors.Is(err, identity.ErrHandleResolutionFailed), errors.Is(err, identity.ErrHandleMismatch),
		errors.Is(err, identity.ErrHandleNotDeclared):
		return nil, http.StatusNotFound, msgActorNotFound
	}
	h.log.WarnContext(ctx, "resolving an actor failed", "actor", actor, "err", err)
	return nil, http.StatusBadGateway, msgResolveFailed
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

// fetchProfile reads did's profile record from its PDS with the public
// com.atproto.repo.getRecord. A missing record is an empty profile.
func (h *Handler) fetchProfile(ctx context.Context, pds string, did syntax.DID) (Profile, error) {
	ctx, cancel := context.WithTimeout(ctx, h.profileTimeout)
	defer cancel()
	q := url.Values{"repo": {did.String()}, "collection": {profileCollection}, "rkey": {profileRKey}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, pds+"/xrpc/com.atproto.repo.getRecord?"+q.Encode(), nil)
	if err != nil {
		return Profile{}, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := h.http.Do(req)
	if err != nil {
		return Profile{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, h.maxProfile+1))
	if err != nil {
		return Profile{}, fmt.Errorf("read getRecord answer: %w", err)
	}
	if int64(len(body)) > h.maxProfile {
		return Profile{}, fmt.Errorf("getRecord answer exceeds %d bytes", h.maxProfile)
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
