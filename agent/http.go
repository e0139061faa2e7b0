package agent

import (
	"net/http"
	"time"

	"github.com/ax-scheduler/ax/action"
	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/member"
	"github.com/ax-scheduler/ax/tasks"
	"github.com/ax-scheduler/ax/ui"
)

// serveHTTP builds the node's HTTP server (not yet serving): the public
// API over the roles, the console, the node-to-node endpoints (members
// only), behind the connection cap, the unusable-state guard, revocation
// tracking and the body deadline. wallClock is the node's own clock,
// uncorrected, and jump its latest clock step, both for the other
// members' clock monitors.
func (a *Agent) serveHTTP(wallClock func() time.Time, jump func() *member.ClockJump) {
	reg, metrics := a.metrics()
	a.reg = reg
	public := api.New(api.Config{Barrier: a.rep, Tasks: a.tasks, Instances: a.tasks, Executors: a.exec, Cluster: a.cl,
		ACL: a.acc, Secrets: a.acc, Channels: a.chans, Shared: a.shared, Live: a.console, Console: a.console, Alerts: a.al, Pages: tasks.NewPages(a.tasks),
		NodeID: a.cfg.NodeID, Stopping: a.stopCh, Auth: a.acc, Logger: a.log, Now: a.now, Metrics: metrics, CheckAction: action.Check})
	var h http.Handler = public
	if !a.cfg.NoUI {
		h = ui.Mount(public)
	}
	// The node-to-node endpoints have their own handler, for members only.
	handler := api.NewInternal(api.InternalConfig{Backend: a.rep, Auth: a.acc, WallClock: wallClock, ClockJump: jump}).Mount(h)
	a.conns = newConnLimiter(a.ln, a.cfg.MaxConns)
	a.http = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer a.conns.serving(r)()
			if a.refuseUnusable(w, r) {
				return
			}
			r, done := a.acc.TrackRequest(r)
			defer done()
			limitBody(w, r)
			handler.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       90 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ConnState:         a.conns.track,
		ConnContext:       a.conns.connContext,
		ErrorLog:          newServerLog(a.log),
	}
}

// refuseUnusable answers every request but /livez and /healthz with a 503
// while the state machine is unusable (a restore failed: see
// fsm.FSM.Failed), and reports whether it did. Such a node knows no task,
// token or member key, so it serves nothing until Raft has installed a
// snapshot again; /healthz says why it is unhealthy.
func (a *Agent) refuseUnusable(w http.ResponseWriter, r *http.Request) bool {
	err := a.fsm.Failed()
	if err == nil || r.URL.Path == "/livez" || r.URL.Path == "/healthz" {
		return false
	}
	api.WriteError(w, &model.Error{Code: model.CodeUnavailable,
		Message: "node " + a.cfg.NodeID + " serves nothing until its state machine has recovered (" + err.Error() + "); use another node"})
	return true
}
