package fixed

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/lexview/lexview/appview/internal/core/caller"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/writepath"
	"github.com/lexview/lexview/appview/internal/web/respond"
)

// uploadBlob answers POST /xrpc/com.atproto.repo.uploadBlob through the
// write path, which streams the body to the caller's PDS through their
// DPoP session (writepath.Service.UploadBlob: the size limit, refused
// before the PDS is contacted when the declared length is over it). The
// PDS's status, content type and body come back unchanged.
func (h *Handler) uploadBlob(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ans, err := h.blobs.UploadBlob(ctx, caller.UserFrom(ctx), writepath.Blob{
		Body: r.Body, ContentType: r.Header.Get("Content-Type"), ContentLength: r.ContentLength,
	})
	switch {
	case err == nil:
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		return // the caller went away
	case fail.KindOf(err) == fail.TooLarge:
		// What is left of the body is not read: the server closes the
		// connection instead of draining it, and a client that sent
		// Expect: 100-continue never sends it.
		w.Header().Set("Connection", "close")
		respond.Fail(w, r, h.log, err)
		return
	default:
		respond.Fail(w, r, h.log, err)
		return
	}
	if ans.ContentType != "" {
		w.Header().Set("Content-Type", ans.ContentType)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(ans.Body)))
	w.WriteHeader(ans.Status)
	_, _ = w.Write(ans.Body)
}
