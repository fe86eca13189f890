package appview

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/lexview/lexview/appview/internal/web/dashboard"
	"github.com/lexview/lexview/appview/internal/web/server"
)

// shutdownTimeout bounds the graceful stop after Run's context ends, and
// the stop of what a failed Start had started.
const shutdownTimeout = 30 * time.Second

// Listen opens the listener on the configured host and port.
func (a *App) Listen() (net.Listener, error) { return Listen(a.cfg) }

// Listen opens a TCP listener on cfg's Host and Port, with the defaults New
// applies (DefaultHost, DefaultPort; Port -1 picks a free port). Called
// before New, it lets the default PublicURL name the port actually bound:
// set cfg.Port to the listener's port, then pass the listener to Serve
// (`appview serve` does this).
func Listen(cfg Config) (net.Listener, error) {
	ln, err := net.Listen("tcp", cfg.listenAddr())
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	return ln, nil
}

// dashboardURL is where the dashboard is served: under PublicURL.
func (a *App) dashboardURL() string {
	return strings.TrimRight(a.cfg.PublicURL, "/") + dashboard.Path
}

// Run starts background work and serves HTTP on the configured address until
// ctx ends, then shuts down gracefully within shutdownTimeout.
func (a *App) Run(ctx context.Context) error {
	ln, err := a.Listen()
	if err != nil {
		return err
	}
	return a.Serve(ctx, ln)
}

// Serve is Run on a listener of the caller's choosing. It starts the
// background work unless Start already did, serves the App's whole HTTP
// surface (Handler) until ctx ends, then calls Shutdown with a deadline of
// 30 seconds. If starting fails, it shuts down what it started and
// returns the error.
func (a *App) Serve(ctx context.Context, ln net.Listener) error {
	first, err := a.start(ctx, len(a.life.parts), false)
	if err != nil {
		ln.Close()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		_ = a.Shutdown(sctx)
		return err
	}
	srv := &http.Server{
		Handler:           a.surfaces.All,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		// Above the front ends' own limit, which answers 431 in JSON.
		MaxHeaderBytes: server.ServerMaxHeaderBytes,
		ErrorLog:       slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
	}
	a.state.mu.Lock()
	if a.state.shutting { // Shutdown came first: do not serve
		a.state.mu.Unlock()
		ln.Close()
		return nil
	}
	a.state.server = srv
	a.state.mu.Unlock()
	a.log.Info("lexview listening", "addr", "http://"+ln.Addr().String(), "public_url", a.cfg.PublicURL, "version", Version)
	a.log.Info("dashboard", "url", a.dashboardURL())
	if first {
		a.announceClaim(ctx)
	}

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var serveErr error
	select {
	case serveErr = <-errc:
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	err = a.Shutdown(sctx)
	if serveErr != nil {
		return fmt.Errorf("serve: %w", serveErr)
	}
	return err
}
