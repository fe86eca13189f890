package xrpc

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"unicode/utf8"

	"github.com/lexview/lexview/appview/internal/core/caller"
	"github.com/lexview/lexview/appview/internal/service/writepath"
	"github.com/lexview/lexview/appview/internal/web/respond"
)

// MaxProcedureBody bounds a procedure's JSON body.
const MaxProcedureBody = 1 << 20

// NotIndexedHeader, on a procedure's successful answer, says why the
// record the PDS accepted is not indexed yet (it is absent when it is).
const NotIndexedHeader = "Lexview-Not-Indexed"

// Writer writes a procedure's record to the caller's PDS (the write-path
// service).
type Writer interface {
	Write(ctx context.Context, user *caller.User, collection string, body []byte) (writepath.Answer, error)
}

// Proxy is the default procedure behaviour: it reads the body and hands it
// to the write path, then returns the PDS's answer unchanged.
type Proxy struct {
	Writer Writer
	Logger *slog.Logger
}

// ServeHTTP implements http.Handler for routed procedure requests.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	lex, _ := LexiconFromContext(r.Context())
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxProcedureBody))
	if err != nil {
		respond.Error(w, http.StatusRequestEntityTooLarge, "request body too large")
		return
	}
	ans, err := p.Writer.Write(r.Context(), caller.UserFrom(r.Context()), lex.TargetCollection, body)
	if err != nil {
		respond.Fail(w, r, p.log(), err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if ans.NotIndexed != "" {
		w.Header().Set(NotIndexedHeader, clipHeader(ans.NotIndexed))
	}
	w.WriteHeader(ans.Status)
	_, _ = w.Write(ans.Body)
}

func (p *Proxy) log() *slog.Logger {
	if p.Logger != nil {
		return p.Logger
	}
	return slog.Default()
}

// clipHeader bounds a header value made of error text to 256 bytes, on a
// UTF-8 boundary.
func clipHeader(v string) string {
	const max = 256
	if len(v) <= max {
		return v
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return v[:cut] + "…"
}
