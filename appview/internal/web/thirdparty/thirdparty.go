// Package thirdparty serves third-party client management on XRPC: a user
// signed in to a top-level API client (the parent) with a DPoP session
// lists, reads, creates and deletes API clients of their own under that
// parent (dev.service.listApiClients, getApiClient, createApiClient,
// deleteApiClient).
//
// Every call authenticates with the parent's key (X-Client-Key) and a
// DPoP-bound session of that client (`Authorization: DPoP` and a `DPoP`
// proof); the session's DID owns the clients it creates. Only one level of
// nesting exists: a child client cannot manage clients. Each call takes a
// token from the parent's rate-limit bucket; each child has a bucket of its
// own with the instance defaults.
package thirdparty

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/appview/internal/web/userauth"
	"github.com/lexview/lexview/storage"
)

// Method names (NSIDs) of the endpoints.
const (
	NSIDList   = "dev.service.listApiClients"
	NSIDGet    = "dev.service.getApiClient"
	NSIDCreate = "dev.service.createApiClient"
	NSIDDelete = "dev.service.deleteApiClient"
)

// Error strings the specification fixes.
const (
	msgNeedsDPoP    = userauth.MsgNeedsDPoP // "requires DPoP authentication"
	msgBadBody      = "invalid request body"
	msgBodyTooLarge = "request body too large"
)

// maxBodySize bounds request bodies.
const maxBodySize = 64 << 10

// Options configure a Handler.
type Options struct {
	// Manager identifies the parent's key (taking a token from its
	// bucket) and creates, reads and deletes the owner's clients.
	Manager *apiclients.Manager
	// Users checks the DPoP session of the parent client.
	Users *userauth.Authenticator
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Handler serves the third-party client endpoints.
type Handler struct {
	manager *apiclients.Manager
	users   *userauth.Authenticator
	log     *slog.Logger
}

// New returns a Handler.
func New(opts Options) *Handler {
	h := &Handler{manager: opts.Manager, users: opts.Users, log: opts.Logger}
	if h.log == nil {
		h.log = slog.Default()
	}
	return h
}

// Mount registers the endpoints on mux. These patterns are more specific
// than the dynamic "/xrpc/{nsid}" route, so ServeMux prefers them.
func (h *Handler) Mount(mux *http.ServeMux) {
	mux.HandleFunc("GET /xrpc/"+NSIDList, h.list)
	mux.HandleFunc("GET /xrpc/"+NSIDGet, h.get)
	mux.HandleFunc("POST /xrpc/"+NSIDCreate, h.create)
	mux.HandleFunc("POST /xrpc/"+NSIDDelete, h.delete)
}

// authenticate checks a request in the specification's order, answering
// and returning false on failure:
//
//  1. `Authorization` missing or not the DPoP scheme: 401 `requires DPoP
//     authentication`;
//  2. no X-Client-Key: 401 `requires an API client key`;
//  3. an unknown or inactive key: 401 `Invalid client`;
//  4. a token from the client's bucket, else 429 with Retry-After;
//  5. the DPoP proof and a session of that client: 401 as userauth says;
//  6. a child client: 401 `child clients cannot manage API clients`, or
//     403 `Child clients cannot create API clients` when creating.
func (h *Handler) authenticate(w http.ResponseWriter, r *http.Request, creating bool) (apiclients.Owner, bool) {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "DPoP") || strings.TrimSpace(token) == "" {
		respond.Error(w, http.StatusUnauthorized, msgNeedsDPoP)
		return apiclients.Owner{}, false
	}
	c, err := h.manager.TakeToken(r.Context(), r.Header.Get("X-Client-Key"))
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return apiclients.Owner{}, false
	}
	s, err := h.users.DPoPSession(r, c.ID)
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return apiclients.Owner{}, false
	}
	o := apiclients.Owner{Parent: c, DID: s.DID}
	if err := apiclients.CheckOwner(o, creating); err != nil {
		respond.Fail(w, r, h.log, err)
		return o, false
	}
	return o, true
}

// ClientCamel is the third-party (camelCase) shape of an API client. It
// never carries the secret.
type ClientCamel struct {
	ID             string   `json:"id"`
	ClientKey      string   `json:"clientKey"`
	Name           string   `json:"name"`
	ClientIDURL    string   `json:"clientIdUrl"`
	ClientURI      string   `json:"clientUri"`
	RedirectURIs   []string `json:"redirectUris"`
	ClientType     string   `json:"clientType"`
	Scopes         string   `json:"scopes"`
	AllowedOrigins []string `json:"allowedOrigins"`
	IsActive       bool     `json:"isActive"`
	CreatedAt      string   `json:"createdAt"`
}

// toCamel renders c in the third-party shape.
func toCamel(c storage.APIClient) ClientCamel {
	return ClientCamel{
		ID: c.ID, ClientKey: c.Key, Name: c.Name, ClientIDURL: c.ClientIDURL, ClientURI: c.ClientURI,
		RedirectURIs: nonNil(c.RedirectURIs), ClientType: c.Type, Scopes: c.Scopes,
		AllowedOrigins: nonNil(c.AllowedOrigins), IsActive: c.IsActive,
		CreatedAt: c.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z"),
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// list answers GET /xrpc/dev.service.listApiClients: the children of the
// caller's client that the caller owns, newest first.
func (h *Handler) list(w http.ResponseWriter, r *http.Request) {
	cl, ok := h.authenticate(w, r, false)
	if !ok {
		return
	}
	children, err := h.manager.ListOwned(r.Context(), cl)
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return
	}
	out := make([]ClientCamel, len(children))
	for i, c := range children {
		out[i] = toCamel(c)
	}
	respond.JSON(w, http.StatusOK, map[string]any{"clients": out})
}

// get answers GET /xrpc/dev.service.getApiClient?id=.
func (h *Handler) get(w http.ResponseWriter, r *http.Request) {
	cl, ok := h.authenticate(w, r, false)
	if !ok {
		return
	}
	id := r.URL.Query().Get("id")
	if id == "" {
		respond.Error(w, http.StatusBadRequest, msgBadBody)
		return
	}
	c, err := h.manager.GetOwned(r.Context(), cl, id)
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return
	}
	respond.JSON(w, http.StatusOK, map[string]any{"client": toCamel(c)})
}

type createRequest struct {
	Name           string   `json:"name"`
	ClientIDURL    string   `json:"clientIdUrl"`
	ClientURI      string   `json:"clientUri"`
	RedirectURIs   []string `json:"redirectUris"`
	Scopes         string   `json:"scopes"`
	ClientType     string   `json:"clientType"`
	AllowedOrigins []string `json:"allowedOrigins"`
}

type createResponse struct {
	Client       ClientCamel `json:"client"`
	ClientSecret string      `json:"clientSecret,omitempty"`
}

// create answers POST /xrpc/dev.service.createApiClient: a child of the
// caller's client owned by the caller, with the instance's default rate
// limits. The secret is returned once, for confidential clients only.
func (h *Handler) create(w http.ResponseWriter, r *http.Request) {
	cl, ok := h.authenticate(w, r, true)
	if !ok {
		return
	}
	var req createRequest
	if !decode(w, r, &req) {
		return
	}
	if req.Name == "" || req.ClientIDURL == "" || req.ClientURI == "" || len(req.RedirectURIs) == 0 {
		respond.Error(w, http.StatusBadRequest, msgBadBody)
		return
	}
	c, secret, err := h.manager.CreateOwned(r.Context(), cl, apiclients.NewClient{
		Name: req.Name, ClientIDURL: req.ClientIDURL, ClientURI: req.ClientURI, RedirectURIs: req.RedirectURIs,
		Scopes: req.Scopes, Type: req.ClientType, AllowedOrigins: req.AllowedOrigins,
	})
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return
	}
	resp := createResponse{Client: toCamel(c)}
	if c.Type == storage.ClientConfidential {
		resp.ClientSecret = secret
	}
	w.Header().Set("Cache-Control", "no-store")
	respond.JSON(w, http.StatusCreated, resp)
}

type deleteRequest struct {
	ID string `json:"id"`
}

// delete answers POST /xrpc/dev.service.deleteApiClient: it removes a
// client the caller owns (and, should it have any, its children) and
// frees its bucket.
func (h *Handler) delete(w http.ResponseWriter, r *http.Request) {
	cl, ok := h.authenticate(w, r, false)
	if !ok {
		return
	}
	var req deleteRequest
	if !decode(w, r, &req) {
		return
	}
	if req.ID == "" {
		respond.Error(w, http.StatusBadRequest, msgBadBody)
		return
	}
	if err := h.manager.DeleteOwned(r.Context(), cl, req.ID); err != nil {
		respond.Fail(w, r, h.log, err)
		return
	}
	respond.JSON(w, http.StatusOK, struct{}{})
}

// decode reads a JSON body into dst, answering 400 `invalid request body`
// (413 when oversized) and returning false on failure.
func decode(w http.ResponseWriter, r *http.Request, dst any) bool {
	err := respond.DecodeJSON(w, r, maxBodySize, dst)
	switch {
	case err == nil:
		return true
	case errors.Is(err, respond.ErrBodyTooLarge):
		respond.Error(w, http.StatusRequestEntityTooLarge, msgBodyTooLarge)
	default:
		respond.Error(w, http.StatusBadRequest, msgBadBody)
	}
	return false
}
