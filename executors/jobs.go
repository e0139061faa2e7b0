package executors

import (
	"time"

	"github.com/ax-scheduler/ax/action"
	"github.com/ax-scheduler/ax/model"
)

// prepareJob completes a leased job before the dispatcher hands it out:
// its effective timeout, the values of the secrets it references and
// its attempt's traceparent (when tracing).
func (e *Executors) prepareJob(job *model.Job) {
	effectiveTimeout(job, e.cfg.DefaultTimeout)
	e.addSecrets(job)
	e.cfg.Tracer.PrepareJob(job)
}

// effectiveTimeout sets the job's policy.timeout to the one its attempt
// runs with, in a form every executor reads: the task's, else (unset, and
// no http action.timeout) the agent's default; a timeout of "none"
// becomes 0, no timeout (an executor older than protocol 4 could not
// decode "none").
func effectiveTimeout(job *model.Job, def time.Duration) {
	switch {
	case job.Policy.Timeout == model.NoTimeout:
		job.Policy.Timeout = 0
	case job.Policy.Timeout == 0 && job.Action.Timeout == 0 && def > 0:
		job.Policy.Timeout = model.Timeout(def)
	}
}

// addSecrets puts the values of the secrets job's action references into
// the job, as the lease hands it to its executor. One that cannot be read
// is left out: the executor then fails the attempt, naming it, and this
// node logs why (never a value).
func (e *Executors) addSecrets(job *model.Job) {
	names := action.SecretRefs(&job.Action)
	if len(names) == 0 {
		return
	}
	job.Secrets = make(map[string]string, len(names))
	for _, n := range names {
		v, err := e.acc.SecretValue(n)
		if err != nil {
			e.log.Warn("a secret of a leased job cannot be delivered", "task", job.Task, "execution", job.ExecutionID, "error", err)
			continue
		}
		job.Secrets[n] = v
	}
}
