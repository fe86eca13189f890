// Package fixed serves the XRPC endpoints whose behaviour does not come
// from a lexicon:
//
//   - POST /xrpc/com.atproto.repo.uploadBlob streams the body to the
//     caller's PDS through their DPoP session (the write path);
//   - GET /xrpc/app.social.actor.getProfile resolves an actor through the
//     identity directory (PLC) and reads their profile record from their
//     PDS;
//   - GET /xrpc/blue.microcosm.links.getBacklinks, getBacklinksCount and
//     getBacklinkDids answer Constellation's backlink queries from the
//     link index (service/backlinks; see docs/queries.md#backlinks).
//
// All are wrapped exactly like the dynamic XRPC routes: API client
// identification and rate limiting first, then user authentication
// (xrpc.UserMiddleware).
package fixed

import (
	"context"
	"log/slog"
	"net/http"
	"strings"

	"github.com/lexview/lexview/appview/internal/core/caller"
	"github.com/lexview/lexview/appview/internal/service/profiles"
	"github.com/lexview/lexview/appview/internal/service/writepath"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/appview/internal/web/userauth"
	"github.com/lexview/lexview/appview/internal/web/xrpc"
)

// Paths of the fixed endpoints.
const (
	UploadBlobPath = writepath.UploadBlobPath
	GetProfilePath = "/xrpc/app.social.actor.getProfile"
)

// Blobs uploads blobs to users' PDSes (*writepath.Service).
type Blobs interface {
	UploadBlob(ctx context.Context, user *caller.User, b writepath.Blob) (writepath.BlobAnswer, error)
}

// Options configure a Handler.
type Options struct {
	// ClientMiddleware identifies the API client (and takes a rate-limit
	// token); nil serves requests without client identification.
	ClientMiddleware func(http.Handler) http.Handler
	// Users authenticates the user behind a request; nil treats every
	// caller as anonymous (so both endpoints answer 401).
	Users *userauth.Authenticator
	// Blobs uploads blobs with the caller's DPoP session.
	Blobs Blobs
	// Profiles looks profiles up for getProfile.
	Profiles *profiles.Service
	// Backlinks answers the backlink methods.
	Backlinks Backlinks
	// Observer counts the calls of each endpoint under its NSID; nil
	// counts nothing.
	Observer xrpc.Observer
	Logger   *slog.Logger
}

// Handler serves the fixed endpoints.
type Handler struct {
	blobs     Blobs
	profiles  *profiles.Service
	backlinks Backlinks
	log       *slog.Logger
	// wrap puts the handler of method behind the middleware of every
	// XRPC route.
	wrap func(method string, next http.Handler) http.Handler
}

// New returns a Handler with unset options at their defaults.
func New(o Options) *Handler {
	h := &Handler{blobs: o.Blobs, profiles: o.Profiles, backlinks: o.Backlinks, log: o.Logger}
	if h.log == nil {
		h.log = slog.Default()
	}
	users, clientMW, observer := o.Users, o.ClientMiddleware, o.Observer
	h.wrap = func(method string, next http.Handler) http.Handler {
		if users != nil {
			next = xrpc.UserMiddleware(users, h.log, next)
		}
		if clientMW != nil {
			next = clientMW(next)
		}
		return xrpc.Observed(observer, method, next)
	}
	return h
}

// Mount registers the endpoints on mux. Their patterns are more specific
// than a catch-all /xrpc/{nsid}, so they take precedence over it.
func (h *Handler) Mount(mux *http.ServeMux) {
	mux.Handle("POST "+UploadBlobPath, h.wrap(strings.TrimPrefix(UploadBlobPath, "/xrpc/"), http.HandlerFunc(h.uploadBlob)))
	mux.Handle("GET "+GetProfilePath, h.wrap(strings.TrimPrefix(GetProfilePath, "/xrpc/"), http.HandlerFunc(h.getProfile)))
	if h.backlinks != nil {
		h.mountBacklinks(mux)
	}
}

// getProfile answers GET /xrpc/app.social.actor.getProfile for an
// authenticated caller (any method): the profile of `actor` (a DID or a
// handle; default the caller).
func (h *Handler) getProfile(w http.ResponseWriter, r *http.Request) {
	user := caller.UserFrom(r.Context())
	if user == nil {
		respond.Error(w, http.StatusUnauthorized, "authentication required")
		return
	}
	actor := strings.TrimSpace(r.URL.Query().Get("actor"))
	if actor == "" {
		actor = user.DID
	}
	p, err := h.profiles.Get(r.Context(), actor)
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return
	}
	respond.JSON(w, http.StatusOK, p)
}
