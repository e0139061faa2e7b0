package model

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// ParamSpec declares one parameter of a task (Task.Params, protocol 8):
// what a trigger may pass, what it must, and what the instance gets when
// nothing is passed. Values stay strings, as everywhere in ax ($AX_PARAM_X,
// {{.Params.x}}); Type says which strings are accepted. Nomad's
// meta_required and meta_optional and Airflow's params are the anchors.
type ParamSpec struct {
	// Type is string (the default), integer, number or boolean (true or
	// false).
	Type string `json:"type,omitempty"`
	// Required refuses a trigger without it (400 naming it). A task whose
	// trigger fires on its own (cron, interval, once) cannot require a
	// parameter that has no default: its fires carry none.
	Required bool `json:"required,omitempty"`
	// Default is the value an instance gets when none is given (fires,
	// submissions, backfills, triggers without it).
	Default *string `json:"default,omitempty"`
	// Enum lists the accepted values (empty: any of the type).
	Enum []string `json:"enum,omitempty"`
	// Pattern is an RE2 regular expression a value must match whole.
	Pattern string `json:"pattern,omitempty"`
	// Description says what the parameter is for (the console's trigger
	// form shows it).
	Description string `json:"description,omitempty"`
}

// Parameter types.
const (
	ParamString  = "string"
	ParamInteger = "integer"
	ParamNumber  = "number"
	ParamBoolean = "boolean"
)

// Bounds of a task's parameter declarations.
const (
	// MaxParams bounds the parameters a task declares.
	MaxParams = 64
	// MaxParamEnum bounds one parameter's enum.
	MaxParamEnum = 256
	// MaxParamPattern bounds one parameter's pattern.
	MaxParamPattern = 512
)

// validateParams checks a task's parameter declarations: names, types,
// enums, patterns and defaults that pass their own checks, and no
// required parameter without a default on a trigger that fires on its
// own.
func (t *Task) validateParams() error {
	if len(t.Params) > MaxParams {
		return FieldErrorf("params", "at most %d parameters, got %d", MaxParams, len(t.Params))
	}
	for _, name := range sortedKeys(t.Params) {
		p := t.Params[name]
		f := "params." + name
		if !ValidParamName(name) {
			return FieldErrorf("params", "%q is not a parameter name: letters, digits and '_', not starting with a digit, at most %d bytes", name, MaxParamName)
		}
		if SystemParam(name) {
			return FieldErrorf(f, "%s is passed by ax itself (onSuccess, onFailure): it cannot be declared", name)
		}
		if !slices.Contains([]string{"", ParamString, ParamInteger, ParamNumber, ParamBoolean}, p.Type) {
			return FieldErrorf(f+".type", "unknown type %q: use string, integer, number or boolean", p.Type)
		}
		if len(p.Description) > MaxComment {
			return FieldErrorf(f+".description", "longer than %d bytes", MaxComment)
		}
		if len(p.Pattern) > MaxParamPattern {
			return FieldErrorf(f+".pattern", "longer than %d bytes", MaxParamPattern)
		}
		if p.Pattern != "" {
			if _, err := regexp.Compile(p.Pattern); err != nil {
				return FieldErrorf(f+".pattern", "not an RE2 regular expression: %v", err)
			}
		}
		if len(p.Enum) > MaxParamEnum {
			return FieldErrorf(f+".enum", "at most %d values, got %d", MaxParamEnum, len(p.Enum))
		}
		for i, v := range p.Enum {
			if e := p.checkType(v); e != "" {
				return FieldErrorf(fmt.Sprintf("%s.enum[%d]", f, i), "%s", e)
			}
			if slices.Contains(p.Enum[:i], v) {
				return FieldErrorf(fmt.Sprintf("%s.enum[%d]", f, i), "%q listed twice", v)
			}
		}
		if p.Default != nil {
			if p.Required {
				return FieldErrorf(f+".default", "a required parameter with a default is never missing: drop one of them")
			}
			if e := p.Check(*p.Default); e != "" {
				return FieldErrorf(f+".default", "%s", e)
			}
		}
		if p.Required && t.Trigger.Type != TriggerEvent {
			return FieldErrorf(f+".required", "a %s trigger fires with no parameters: give it a default instead", t.Trigger.Type)
		}
	}
	return nil
}

// decimalRE is a decimal number as JSON writes one, with an optional
// sign and leading digits: no hex, no underscores, no Inf or NaN.
var decimalRE = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// checkType says why v is not a value of p's type ("" when it is).
func (p *ParamSpec) checkType(v string) string {
	if len(v) > MaxParamValue {
		return fmt.Sprintf("longer than %d bytes", MaxParamValue)
	}
	switch p.Type {
	case ParamInteger:
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return fmt.Sprintf("%q is not an integer", v)
		}
	case ParamNumber:
		if !decimalRE.MatchString(v) {
			return fmt.Sprintf("%q is not a decimal number", v)
		}
	case ParamBoolean:
		if v != "true" && v != "false" {
			return fmt.Sprintf("%q is not true or false", v)
		}
	}
	return ""
}

// Check says why v is not an accepted value of p ("" when it is): its
// type, its enum, its pattern.
func (p *ParamSpec) Check(v string) string {
	if e := p.checkType(v); e != "" {
		return e
	}
	if len(p.Enum) > 0 && !slices.Contains(p.Enum, v) {
		return fmt.Sprintf("%q is not one of %s", v, strings.Join(p.Enum, ", "))
	}
	if p.Pattern != "" {
		re, err := regexp.Compile(`^(?:` + p.Pattern + `)$`)
		if err != nil || !re.MatchString(v) {
			return fmt.Sprintf("%q does not match the pattern %s", v, p.Pattern)
		}
	}
	return ""
}

// ResolveParams checks the params given to an instance of a task that
// declares schema, and returns them with the defaults filled in: a name
// the task does not declare, a value its declaration refuses and a
// required parameter not given are each an *Error naming the parameter
// (params.NAME), checked in name order. The parameters ax passes itself
// (SystemParam) pass unchecked. A task that declares none takes any parameters, as
// before protocol 8; given is returned as it is.
func ResolveParams(schema map[string]ParamSpec, given map[string]string) (map[string]string, error) {
	if len(schema) == 0 {
		return given, nil
	}
	for _, k := range sortedKeys(given) {
		p, ok := schema[k]
		if !ok {
			if SystemParam(k) {
				continue
			}
			return nil, FieldErrorf("params."+k, "the task declares no parameter %s (it declares %s)", k, strings.Join(sortedKeys(schema), ", "))
		}
		if e := p.Check(given[k]); e != "" {
			return nil, FieldErrorf("params."+k, "%s", e)
		}
	}
	var out map[string]string
	for _, k := range sortedKeys(schema) {
		p := schema[k]
		if _, ok := given[k]; ok || p.Default == nil {
			if !ok && p.Required {
				return nil, FieldErrorf("params."+k, "required: the task declares it required and gives no default")
			}
			continue
		}
		if out == nil {
			out = make(map[string]string, len(given)+len(schema))
			for gk, gv := range given {
				out[gk] = gv
			}
		}
		out[k] = *p.Default
	}
	if out == nil {
		return given, nil
	}
	return out, nil
}
