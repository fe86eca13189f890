package xrpc

import (
	"net/http"
	"time"
)

// Observer counts the XRPC calls answered, by method, with their status
// and latency (*history.Calls, for the dashboard's history).
type Observer interface {
	Observe(method string, status int, took time.Duration)
}

// Observed hands every call next answers to o as a call of method; nil o
// leaves next as it is.
func Observed(o Observer, method string, next http.Handler) http.Handler {
	if o == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		start := time.Now()
		defer func() { o.Observe(method, sw.code(), time.Since(start)) }()
		next.ServeHTTP(sw, r)
	})
}

// statusWriter remembers the status of the answer written through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the writer underneath
// (flushing a streamed answer).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// code is the status answered; 200 when the handler wrote nothing.
func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}
