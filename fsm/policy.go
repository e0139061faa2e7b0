package fsm

import (
	"encoding/json"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/model"
)

// Protocol 4 policies (DESIGN.md, "Protocol 4 policies"): dependsOn and
// onSuccess cycles refused (here), onUpstreamFailure and onSuccess chains
// (deps.go) and the overlap=queue bound maxQueued (slots.go). Every rule
// applies inside apply only from the entry after set_proto 4, so that an
// entry an older release logged replays as it was first applied;
// Precheck applies the put_task rules to every new proposal.

// protoPolicies is the protocol that adds these rules.
const protoPolicies = 4

// protoAt returns the protocol the state had when this command began.
func (w *writer) protoAt() int {
	if w.proto == 0 {
		w.proto = stateProto(w.tx)
	}
	return w.proto
}

// policyRefusal is what put_task refuses at protocol proto beyond the
// static checks: a protocol-4 field before the cluster reached it, or a
// dependsOn or onSuccess cycle through the task (reading the stored
// tasks, with t in place of the stored definition of its name).
func policyRefusal(tx *bolt.Tx, proto int, t *model.Task) *model.Error {
	if proto < protoPolicies {
		if f := t.Policy.UsesProto4(); f != "" {
			return &model.Error{Code: model.CodePrecondition, Field: f,
				Message: fmt.Sprintf("%s needs protocol %d, the cluster is at protocol %d: upgrade every member first", f, protoPolicies, proto)}
		}
		return nil
	}
	deps := func(p *model.Policy) []string { return p.DependsOn }
	if path := findCycle(tx, t, deps); path != nil {
		return model.FieldErrorf("policy.dependsOn", "dependsOn cycle: %s", strings.Join(path, " -> "))
	}
	chain := func(p *model.Policy) []string {
		out := make([]string, len(p.OnSuccess))
		for i, c := range p.OnSuccess {
			out[i] = c.Task
		}
		return out
	}
	if path := findCycle(tx, t, chain); path != nil {
		return model.FieldErrorf("policy.onSuccess", "onSuccess cycle: %s", strings.Join(path, " -> "))
	}
	return nil
}

// findCycle returns a path t -> ... -> t along the edges next gives (the
// stored definitions of the other tasks, t's own), or nil. It explores
// edges in list order, depth first, so every replica names the same
// cycle; each task is expanded once.
func findCycle(tx *bolt.Tx, t *model.Task, next func(*model.Policy) []string) []string {
	seen := map[string]bool{}
	var path []string
	var walk func(name string, p *model.Policy) bool
	walk = func(name string, p *model.Policy) bool {
		path = append(path, name)
		for _, n := range next(p) {
			if n == t.Name {
				path = append(path, n)
				return true
			}
			if seen[n] {
				continue
			}
			seen[n] = true
			v := tx.Bucket(bktTasks).Get([]byte(n))
			if v == nil {
				continue
			}
			var st storedTask
			if json.Unmarshal(v, &st) != nil {
				continue
			}
			if walk(n, &st.Policy) {
				return true
			}
		}
		path = path[:len(path)-1]
		return false
	}
	seen[t.Name] = true
	if walk(t.Name, &t.Policy) {
		return path
	}
	return nil
}
