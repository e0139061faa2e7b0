package agent

import (
	"net/http"

	"github.com/ax-scheduler/ax/api"
	"github.com/ax-scheduler/ax/model"
)

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
