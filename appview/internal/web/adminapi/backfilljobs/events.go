package backfilljobs

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/lexview/lexview/appview/internal/service/admins"
	jobs "github.com/lexview/lexview/backfill"
)

// defaultKeepalive is how often an idle progress stream sends a comment
// unless Mount is given another interval.
const defaultKeepalive = 15 * time.Second

// events answers GET /admin/backfill/{id}/events: a Server-Sent Events
// stream whose messages are `event: event` with a JSON payload (see
// backfill.Event). The first message is a job_counters snapshot; the
// stream ends after job_completed, or when the client goes away.
func (h handlers) events(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	sub, job, err := h.svc.Subscribe(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	defer sub.Close()
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // the stream outlives the server's write timeout
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("Connection", "keep-alive")
	hdr.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	send := func(ev jobs.Event) bool {
		if err := writeEvent(w, ev); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send(jobs.CountersEvent(job)) {
		return nil
	}
	if job.Finished() {
		send(h.svc.CompletedEvent(r.Context(), job))
		return nil
	}
	every := h.keepalive
	if every <= 0 {
		every = defaultKeepalive
	}
	keepalive := time.NewTicker(every)
	defer keepalive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return nil
		case ev := <-sub.Events():
			if !send(ev) {
				return nil
			}
		case <-sub.Done():
			for { // what was published before completion comes first
				select {
				case ev := <-sub.Events():
					if !send(ev) {
						return nil
					}
				default:
					send(sub.Final())
					return nil
				}
			}
		case <-keepalive.C:
			if _, err := io.WriteString(w, ": keepalive\n\n"); err != nil || rc.Flush() != nil {
				return nil
			}
		}
	}
}

// writeEvent writes one SSE message.
func writeEvent(w io.Writer, ev jobs.Event) error {
	data, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	_, err = fmt.Fprintf(w, "event: event\ndata: %s\n\n", data)
	return err
}
