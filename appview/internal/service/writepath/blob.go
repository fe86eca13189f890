package writepath

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/lexview/lexview/appview/internal/core/caller"
	"github.com/lexview/lexview/appview/internal/core/fail"
)

// UploadBlobPath is the PDS method UploadBlob calls, and the path the
// front end serves it on.
const UploadBlobPath = "/xrpc/com.atproto.repo.uploadBlob"

// DefaultMaxBlobSize is the largest blob UploadBlob accepts by default
// (Options.MaxBlobSize): 50 MB (50 MiB, 52,428,800 bytes, like the PDS
// stand-in's default).
const DefaultMaxBlobSize = 50 << 20

// maxUploadAnswer bounds the PDS's answer to uploadBlob (a small JSON
// blob reference); a longer answer is a PDS failure.
const maxUploadAnswer = 1 << 20

var (
	// ErrBlobTooLarge refuses a blob over the limit.
	ErrBlobTooLarge  = fail.New(fail.TooLarge, "blob too large")
	errNoBlobSession = fail.New(fail.Unauthenticated, caller.MsgNeedsDPoP)
	errAnswerTooLong = errors.New("the PDS's answer is longer than a blob reference")
)

// Blob is a blob to upload: its bytes as they arrive, their content type
// and declared length (-1 when unknown).
type Blob struct {
	Body          io.Reader
	ContentType   string
	ContentLength int64
}

// BlobAnswer is the PDS's answer to an upload, passed on unchanged.
type BlobAnswer struct {
	Status      int
	ContentType string
	Body        []byte
}

// UploadBlob streams b to the user's PDS (com.atproto.repo.uploadBlob)
// through their device session, never holding it whole, and returns the
// PDS's answer. A blob over the limit (Options.MaxBlobSize) is
// ErrBlobTooLarge: at once, without contacting the PDS, when its declared
// length is over; otherwise when its stream goes one byte past the limit,
// whatever the PDS made of the stream cut off there. A PDS that answers
// with an error status is a BlobAnswer too; a PDS that cannot be reached,
// or answers more than a blob reference, is an upstream failure
// (PDSError).
func (s *Service) UploadBlob(ctx context.Context, user *caller.User, b Blob) (BlobAnswer, error) {
	if user == nil || user.SessionID == "" {
		return BlobAnswer{}, errNoBlobSession
	}
	if b.ContentLength > s.opt.MaxBlobSize {
		return BlobAnswer{}, ErrBlobTooLarge
	}
	body := &cappedReader{r: b.Body, left: s.opt.MaxBlobSize}
	resp, err := s.opt.PDS.Do(ctx, user.SessionID, http.MethodPost, UploadBlobPath, nil, body, b.ContentType, b.ContentLength)
	if body.over.Load() {
		if resp != nil {
			_ = resp.Body.Close()
		}
		return BlobAnswer{}, ErrBlobTooLarge
	}
	if err != nil {
		if ctx.Err() != nil {
			return BlobAnswer{}, ctx.Err() // the caller went away
		}
		err = PDSError(err)
		if !errors.Is(err, ErrSessionExpired) {
			s.opt.Logger.ErrorContext(ctx, "proxying uploadBlob failed", "err", err)
		}
		return BlobAnswer{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxUploadAnswer+1))
	if err == nil && len(answer) > maxUploadAnswer {
		err = errAnswerTooLong
	}
	if err != nil {
		s.opt.Logger.ErrorContext(ctx, "reading the PDS's uploadBlob answer failed", "err", err, "bytes", len(answer))
		return BlobAnswer{}, PDSError(err)
	}
	return BlobAnswer{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Body: answer}, nil
}

// cappedReader reads at most left bytes of r, and records whether r went
// past them (the transport reading it may wrap or drop its error, so the
// service asks the reader, not the error).
type cappedReader struct {
	r    io.Reader
	left int64
	over atomic.Bool // set by the transport's writer, read by UploadBlob
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		// At the limit: one more byte decides.
		var one [1]byte
		n, err := c.r.Read(one[:])
		if n > 0 {
			c.over.Store(true)
			return 0, ErrBlobTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}
