package server

import (
	"net/http"

	"github.com/lexview/lexview/appview/internal/web/respond"
)

// MaxHeaderBytes is the largest request head (request line and header
// fields, as sent on the wire) Lexview's front ends accept; a larger one
// is answered 431 {"error": "request header fields too large"}.
const MaxHeaderBytes = 64 << 10

// ServerMaxHeaderBytes is the http.Server MaxHeaderBytes Lexview serves
// with: well above MaxHeaderBytes, so that an oversized head still
// reaches the handlers and gets the JSON answer. net/http itself refuses
// a head over ServerMaxHeaderBytes (plus its 4 KiB of read slack) before
// any handler runs, with a plain-text 431, and closes the connection.
const ServerMaxHeaderBytes = 4 * MaxHeaderBytes

// errHeaderTooLarge is the error of the 431 answer.
const errHeaderTooLarge = "request header fields too large"

// securityHeaders sets the headers every answer carries, whatever serves
// it: X-Content-Type-Options: nosniff, so that no browser reads a JSON
// answer (or a record's text inside one) as HTML or script.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}

// limitHeaders answers 431 with a JSON error for a request whose head is
// larger than MaxHeaderBytes, and passes the others to next.
func limitHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if headSize(r) > MaxHeaderBytes {
			respond.Error(w, http.StatusRequestHeaderFieldsTooLarge, errHeaderTooLarge)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// headSize is the size of r's head as an HTTP/1.1 client sends it: the
// request line, the Host field (which net/http takes out of r.Header),
// each field as "Name: value\r\n", and the blank line.
func headSize(r *http.Request) int {
	n := len(r.Method) + 1 + len(r.RequestURI) + 1 + len(r.Proto) + 2
	if r.Host != "" {
		n += len("Host: ") + len(r.Host) + 2
	}
	for name, values := range r.Header {
		for _, v := range values {
			n += len(name) + 2 + len(v) + 2
		}
	}
	return n + 2
}
