package fixed

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/lexview/lexview/appview/internal/core/caller"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/appview/internal/web/userauth"
	"github.com/lexview/lexview/oauth"
)

// maxUploadResponse bounds the PDS's answer to uploadBlob (a small JSON
// blob reference); a longer answer is a PDS failure.
const maxUploadResponse = 1 << 20

// msgBlobTooLarge refuses a blob over the limit.
const msgBlobTooLarge = "blob too large"

// errUpstream answers a PDS that could not be reached or read: the
// specification's upstream PDS failure (500).
var errUpstream = fail.New(fail.Upstream, "upstream PDS failure")

// uploadBlob proxies POST /xrpc/com.atproto.repo.uploadBlob to the
// caller's PDS. The caller must be a DPoP session (nothing else can act on
// the PDS). The body is streamed, never held whole: a declared length over
// the limit is refused before the PDS is contacted, and a body without a
// declared length is cut off one byte past the limit, both with 413. The
// PDS's status, content type and body come back unchanged.
func (h *Handler) uploadBlob(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	user := caller.UserFrom(ctx)
	if user == nil || user.SessionID == "" {
		respond.Error(w, http.StatusUnauthorized, userauth.MsgNeedsDPoP)
		return
	}
	if r.ContentLength > h.maxBlob {
		// The body is not read: the server closes the connection instead
		// of draining it, and a client that sent Expect: 100-continue
		// never sends it.
		w.Header().Set("Connection", "close")
		respond.Error(w, http.StatusRequestEntityTooLarge, msgBlobTooLarge)
		return
	}
	body := &overLimitReader{r: http.MaxBytesReader(w, r.Body, h.maxBlob)}
	resp, err := h.pds.Do(ctx, user.SessionID, http.MethodPost, UploadBlobPath, nil, body,
		r.Header.Get("Content-Type"), r.ContentLength)
	if body.over.Load() {
		// Whatever the PDS made of the truncated stream, the upload was
		// refused here.
		if resp != nil {
			resp.Body.Close()
		}
		respond.Error(w, http.StatusRequestEntityTooLarge, msgBlobTooLarge)
		return
	}
	if err != nil {
		var re *oauth.RefreshError
		if errors.As(err, &re) {
			respond.Error(w, http.StatusUnauthorized, caller.MsgTokenExpired)
			return
		}
		if ctx.Err() != nil {
			return // the caller went away
		}
		h.log.ErrorContext(ctx, "proxying uploadBlob failed", "err", err)
		respond.Fail(w, r, h.log, errUpstream)
		return
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxUploadResponse+1))
	if err != nil || len(answer) > maxUploadResponse {
		h.log.ErrorContext(ctx, "reading the PDS's uploadBlob answer failed", "err", err, "bytes", len(answer))
		respond.Fail(w, r, h.log, errUpstream)
		return
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

// overLimitReader records whether the http.MaxBytesReader it wraps hit its
// limit, whatever the transport later does with the error.
type overLimitReader struct {
	r    io.Reader
	over atomic.Bool // read by the handler, set by the transport's writer
}

func (o *overLimitReader) Read(p []byte) (int, error) {
	n, err := o.r.Read(p)
	var tooBig *http.MaxBytesError
	if err != nil && errors.As(err, &tooBig) {
		o.over.Store(true)
	}
	return n, err
}
