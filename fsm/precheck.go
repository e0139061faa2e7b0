package fsm

import (
	bolt "go.etcd.io/bbolt"

	"github.com/ax-scheduler/ax/fsm/command"
	"github.com/ax-scheduler/ax/model"
)

// Precheck answers c from the current state when applying it could only
// refuse it or change nothing, so that the leader spends no log entry on
// it: it returns the result the state machine would give, or nil when c
// must be applied.
//
// It is the apply of c's type (handlers) up to its first write, in a read
// transaction: the header and the body validated as apply does (so a
// forwarded command is checked as if it came from the API), a new
// put_task held to this version's rules, then the type's check against
// the state, the one apply runs before it writes. A retry of a known
// request id is left to the state machine, which answers it with the
// first result. The state machine checks again when it applies and stays
// authoritative.
func (f *FSM) Precheck(c *command.Command) *Result {
	res := f.precheck(c)
	if res != nil && c.ReqID != "" && f.knownRequest(c.ReqID) {
		return nil
	}
	return res
}

// Check is Precheck for callers that want the refusal as an error: it
// returns the error Precheck answers (nil for an answer that is not an
// error, such as a complete_batch whose reports are all refused).
func (f *FSM) Check(c *command.Command) error {
	if r := f.Precheck(c); r != nil && r.Err != nil {
		return r.Err
	}
	return nil
}

func (f *FSM) precheck(c *command.Command) *Result {
	if e := c.ValidateHeader(); e != nil {
		return errResult(e)
	}
	var res *Result
	err := f.view(func(tx *bolt.Tx) error {
		res = precheckIn(tx, c)
		return nil
	})
	if err != nil {
		return nil // closed: let the proposal find out
	}
	return res
}

// precheckIn is precheck in a read transaction. A type this version does
// not apply, ignorable or not, is refused: it is never proposed.
func precheckIn(tx *bolt.Tx, c *command.Command) *Result {
	h := handlerOf(c.Type)
	switch {
	case c.Type == command.TypeBatch:
		return errResult(model.Errorf(model.CodeInvalid, "a batch is built by the leader's group commit, not proposed"))
	case h == nil:
		return errResult(unknownType(c.Type))
	}
	w := &writer{tx: tx, cmd: c, dry: true}
	res := h.precheck(w)
	if w.err != nil {
		return nil // a stored record that does not decode: the apply decides
	}
	return res
}

func (f *FSM) knownRequest(id string) bool {
	known := false
	_ = f.view(func(tx *bolt.Tx) error {
		known = tx.Bucket(bktRequests).Get([]byte(id)) != nil
		return nil
	})
	return known
}
