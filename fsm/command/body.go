package command

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"

	"github.com/ax-scheduler/ax/model"
)

// Body is a command body that checks itself once decoded: the bounds
// every replica holds it to, reading nothing but the command (whose time
// durations are added to).
type Body interface {
	Validate(c *Command) *model.Error
}

// DecodeJSON decodes c's JSON body into v and validates it. A body that
// does not decode is answered invalid_argument, naming the type.
func DecodeJSON(c *Command, v Body) *model.Error {
	if err := json.Unmarshal(c.Body, v); err != nil {
		return model.Errorf(model.CodeInvalid, "undecodable %s body: %v", c.Type, legacyJSONError(err))
	}
	return v.Validate(c)
}

// JSONBody decodes c's JSON body into a new T and validates it (the
// decoding of every type whose body is JSON).
func JSONBody[T any, B interface {
	*T
	Body
}](c *Command) (B, *model.Error) {
	b := B(new(T))
	return b, DecodeJSON(c, b)
}

// legacyJSONError words a JSON type error as it was worded when the body
// types lived in package fsm, and the notification channels in package
// model: encoding/json names the Go type ("Go value of type fsm.PutTask",
// "of type model.Channel"), and the answer is replicated state
// (remembered with the request id), so a replica of this release must
// answer an undecodable body word for word as one of the release before.
func legacyJSONError(err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Type == nil {
		return err
	}
	cp := *te
	if s, ok := legacyStructs[cp.Struct]; ok {
		cp.Struct = s
	}
	cp.Type = renamedType{te.Type, legacyTypeNames.Replace(te.Type.String())}
	return &cp
}

// legacyStructs maps the body types whose name changed in the moves.
var legacyStructs = map[string]string{"NodeRef": "nodeRef", "Email": "EmailChannel"}

// legacyTypeNames rewrites the moved types in a Go type's name.
var legacyTypeNames = strings.NewReplacer("command.NodeRef", "fsm.nodeRef", "command.", "fsm.",
	"channel.Channel", "model.Channel", "channel.Email", "model.EmailChannel")

// renamedType is a reflect.Type that names itself otherwise.
type renamedType struct {
	reflect.Type
	name string
}

func (t renamedType) String() string { return t.name }
