package appview

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/lexview/lexview/appview/internal/core/cluster"
	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/storage"
)

// Event-log types of leadership hand-overs: an instance taking the lease
// over from another (not leading from its start), and a leader losing it
// (not stepping down at shutdown). The subject is the instance's ID; the
// detail holds "reason" (cluster.ReasonElected, cluster.ReasonLost).
const (
	eventLeaderElected = "instance.leading"
	eventLeaderStepped = "instance.stepped_down"
)

// newLeadership prepares the election among the instances sharing the
// database: on PostgreSQL by lease, on SQLite (one process) none: the
// instance always leads.
func (a *App) newLeadership() {
	id := a.cfg.Cluster.InstanceID
	if id == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		id = hex.EncodeToString(b[:])
		a.cfg.Cluster.InstanceID = id
	}
	info, _ := json.Marshal(map[string]string{"version": Version, "public_url": a.cfg.PublicURL})
	var store cluster.Store
	if a.store.Dialect() == "postgres" {
		store = a.store
	}
	a.leader = &leaderWork{}
	a.leadership = cluster.New(cluster.Options{
		Store: store, InstanceID: id, Info: info, TTL: a.cfg.Cluster.LeaderLease, Work: a.leader,
		Logger: a.log.With("instance", id), Now: a.cfg.Now,
		Changed: func(leading bool, reason string) {
			a.metrics.Leading(id, leading)
			// The event log tells of hand-overs: a takeover, a lost lease.
			// Leading from the start and stepping down at shutdown are
			// the ordinary life of an instance.
			entry := eventlog.Entry{Subject: id, Detail: map[string]any{"reason": reason}}
			switch reason {
			case cluster.ReasonElected:
				entry.Type = eventLeaderElected
			case cluster.ReasonLost:
				entry.Type, entry.Severity = eventLeaderStepped, eventlog.Warn
			default:
				return
			}
			a.events.Record(context.Background(), entry)
		},
	})
}

// leaderWork is the singleton work: the parts only the leader runs,
// started in order when elected and stopped in reverse when stepping
// down.
type leaderWork struct {
	life lifecycle
}

func (w *leaderWork) Lead(ctx context.Context, _ *storage.Lease) error {
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	return w.life.start(ctx, stopCtx, len(w.life.parts))
}

func (w *leaderWork) StepDown(ctx context.Context) error { return w.life.stop(ctx) }

// InstanceID is this instance's name among those sharing the database
// (Config.Cluster.InstanceID, or the random one it was given).
func (a *App) InstanceID() string { return a.cfg.Cluster.InstanceID }

// Leading reports whether this instance runs the singleton work (the event
// sources, labeler subscriptions, sweeps): always with SQLite, for the
// holder of the leader's lease with PostgreSQL.
func (a *App) Leading() bool { return a.leadership.State().Leading }

// readiness reports whether the instance can serve, for GET /ready: the
// database answers, the instance has started, and its role. The leader
// adds its event sources' lag; a follower names the leader.
func (a *App) readiness(ctx context.Context) (bool, map[string]any) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st := a.leadership.State()
	out := map[string]any{"instance": st.InstanceID, "leader": st.Leading}
	ready := true
	lease, err := a.store.GetLease(ctx, cluster.DefaultLeaseName)
	if err != nil {
		ready = false
		out["database"] = "unreachable"
	} else {
		out["database"] = "ok"
		if a.store.Dialect() == "postgres" {
			out["leader_instance"] = map[bool]string{true: lease.Holder, false: ""}[lease.Live]
		} else {
			out["leader_instance"] = st.InstanceID
		}
	}
	a.state.mu.Lock()
	started := a.state.started && !a.state.shutting
	a.state.mu.Unlock()
	if !started {
		ready = false
	}
	out["started"] = started
	if st.Leading {
		lags := map[string]float64{}
		for _, src := range a.sources {
			lags[src.Name()] = src.Status().Lag
		}
		out["source_lag_seconds"] = lags
	}
	out["status"] = map[bool]string{true: "ready", false: "not_ready"}[ready]
	return ready, out
}
