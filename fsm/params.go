package fsm

import (
	"encoding/json"
	"errors"

	"github.com/ax-scheduler/ax/model"
)

// instanceParams resolves the params of a new instance of task
// (model.ResolveParams: from protocol 8 a task may declare them) and
// encodes them, keys sorted (nil for none). A refusal is the *model.Error
// naming the parameter; a task that declares none takes given as it is.
func (w taskWrites) instanceParams(task string, given map[string]string) ([]byte, *model.Error) {
	if t, ok := w.definition(task); ok && len(t.Params) > 0 {
		p, err := model.ResolveParams(t.Params, given)
		if err != nil {
			var e *model.Error
			if errors.As(err, &e) {
				return nil, e
			}
			return nil, model.FieldErrorf("params", "%v", err)
		}
		given = p
	}
	if len(given) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(given) // sorted keys: deterministic
	if err != nil {
		w.err = err
	}
	return b, nil
}
