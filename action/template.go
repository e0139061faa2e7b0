package action

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/template"
	"time"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/tmpl"
)

// TemplateTimeLimit bounds the time one template takes to render, at an
// API dry run (Check) and on an executor. The state machine never renders
// with a clock; its bounds are package tmpl's (see model/tmpl).
const TemplateTimeLimit = 100 * time.Millisecond

// errTimeLimit stops a rendering that ran past TemplateTimeLimit.
var errTimeLimit = fmt.Errorf("template took longer than %s to render, and %s on a second try",
	TemplateTimeLimit, renderPatience*TemplateTimeLimit)

// overTime reports whether err is a rendering that ran past its limit
// on every try. Unlike other template errors it may pass (a busy
// executor can stall any rendering), so an attempt that fails on it is
// retryable.
func overTime(err error) bool { return errors.Is(err, errTimeLimit) }

// templateData is what {{...}} in a command, url or body sees.
type templateData struct {
	// ScheduledAt is the fire time, RFC 3339 in UTC with milliseconds.
	ScheduledAt string
	Task        string
	InstanceID  string
	ExecutionID string
	Attempt     int
	Params      map[string]value
	// Payload is a value, or a jsonValue in an HTTP template when the
	// payload is JSON but not a string.
	Payload any
	// Shard is a shard's place ({{.Shard.Index}} of {{.Shard.Total}});
	// zero for an instance that is not a shard.
	Shard model.ShardRef
	// Upstream are the upstream tasks' results, by task name.
	Upstream map[string]upstream

	scheduled time.Time
	loc       *time.Location // the job's timezone
	locErr    error          // why it could not be loaded
}

// Date is the scheduled date, YYYY-MM-DD, in the job's timezone.
func (d templateData) Date() (string, error) {
	t, err := d.local()
	if err != nil {
		return "", err
	}
	return t.Format(time.DateOnly), nil
}

// Yesterday is the day before Date, YYYY-MM-DD.
func (d templateData) Yesterday() (string, error) {
	t, err := d.local()
	if err != nil {
		return "", err
	}
	y, m, day := t.Date()
	// Noon, so that a DST change can't move the result to another day.
	return time.Date(y, m, day-1, 12, 0, 0, 0, t.Location()).Format(time.DateOnly), nil
}

func (d templateData) local() (time.Time, error) {
	if d.locErr != nil {
		return time.Time{}, d.locErr
	}
	return d.scheduled.In(d.loc), nil
}

// newTemplateData returns the data of job's templates; jsonPayload makes
// a payload that is JSON but not a string a jsonValue.
func newTemplateData(job Job, jsonPayload bool) templateData {
	params := make(map[string]value, len(job.Params))
	for k, v := range job.Params {
		params[k] = value(v)
	}
	var payload any = value(payloadText(job.Payload))
	if raw := bytes.TrimSpace(job.Payload); jsonPayload && len(raw) > 0 && raw[0] != '"' && json.Valid(raw) {
		payload = jsonValue(raw)
	}
	loc, err := time.LoadLocation(job.Timezone)
	if err != nil {
		err = fmt.Errorf("timezone %q: %w", job.Timezone, err)
	}
	var shard model.ShardRef
	if job.Shard != nil {
		shard = *job.Shard
	}
	return templateData{
		Shard:       shard,
		ScheduledAt: scheduledText(job),
		Task:        job.Task,
		InstanceID:  job.InstanceID,
		ExecutionID: job.ExecutionID,
		Attempt:     job.Attempt,
		Params:      params,
		Payload:     payload,
		Upstream:    upstreamData(job.Upstream),
		scheduled:   job.ScheduledAt,
		loc:         loc,
		locErr:      err,
	}
}

// scheduledText is the job's fire time as {{.ScheduledAt}} and
// AX_SCHEDULED_AT give it.
func scheduledText(job Job) string { return job.ScheduledAt.UTC().Format(model.TimeLayout) }

// payloadText is the payload as templates and AX_PAYLOAD see it: a JSON
// string as its value, anything else as its JSON text, "" for none.
func payloadText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			return s
		}
	}
	return string(raw)
}

// render executes text, the template of field ("action.command",
// "action.url", "action.body"), for job, within the limits: the rules and
// functions of model, timeLimit (checked on every write and function
// call), and twice tmpl.OutputLimit of output (a marker takes
// twice its value's length; the caller checks the final text against the
// limit). Caller values and secrets come out as markers.
func render(field, text string, job Job, jsonPayload bool, timeLimit time.Duration) (string, error) {
	if !strings.Contains(text, "{{") && strings.IndexByte(text, 0) < 0 {
		return text, nil
	}
	t, err := model.ParseTemplate(field, text)
	if err != nil {
		return "", err
	}
	t = t.Option("missingkey=zero")
	data := newTemplateData(job, jsonPayload)
	for try := 1; ; try++ {
		deadline := now().Add(timeLimit)
		check := func() error {
			if now().After(deadline) {
				return errTimeLimit
			}
			return nil
		}
		funcs := &tmpl.Funcs{Check: check}
		w := &tmpl.Writer{Limit: 2 * tmpl.OutputLimit, Check: check}
		err = tmpl.Render(t, data, funcs, actionFuncs(funcs, job), w)
		if overTime(err) && try < renderTries {
			// A busy machine can stall any rendering past the limit; a
			// template that is slow in truth fails the longer try too.
			timeLimit *= renderPatience
			continue
		}
		if err != nil {
			return "", err
		}
		out := w.String()
		if strings.Contains(out, noValue) && !strings.Contains(text, noValue) {
			return "", errNoValue
		}
		return out, nil
	}
}

// A rendering that runs past its limit is tried renderTries times in
// all, each with renderPatience times the previous limit: on a starved
// executor (CPU hogs, load 30 on 2 cores) 100 ms of wall clock passed
// while a one-line command rendered, and an attempt with maxRetries 0
// failed for it.
const (
	renderTries    = 2
	renderPatience = 10
)

// now is the clock renderings are timed by (a test stalls it).
var now = time.Now

// actionFuncs are the functions of an executor's templates that differ
// from model's: escapers keep a marked value marked (urlquery's result
// becomes safe in a URL), raw unmarks, secret returns a secret as a marked
// value.
func actionFuncs(funcs *tmpl.Funcs, job Job) template.FuncMap {
	escaper := func(esc func(...any) (string, error), mark func(string) any) func(...any) (any, error) {
		return func(args ...any) (any, error) {
			marked := false
			plain := make([]any, len(args))
			for i, a := range args {
				var m bool
				plain[i], m = unmark(a)
				marked = marked || m
			}
			s, err := esc(plain...)
			if err != nil || !marked {
				return s, err
			}
			return mark(s), nil
		}
	}
	return template.FuncMap{
		"html":     escaper(funcs.HTML, func(s string) any { return value(s) }),
		"js":       escaper(funcs.JS, func(s string) any { return value(s) }),
		"urlquery": escaper(funcs.URLQuery, func(s string) any { return urlValue(s) }),
		"raw": func(a any) (string, error) {
			text, _ := unmark(a)
			s, ok := text.(string)
			if !ok {
				return funcs.Print(text)
			}
			if strings.IndexByte(s, 0) >= 0 {
				return "", errors.New("raw: the value contains a NUL byte")
			}
			return s, nil
		},
		"secret": func(name string) (value, error) {
			s, err := lookupSecret(job, name)
			return value(s), err
		},
	}
}

// expandCommand expands a shell command template. Caller values and
// secrets are quoted for where they land in the command; see quoteShell.
func expandCommand(text string, job Job) (string, error) {
	s, err := render("action.command", text, job, false, TemplateTimeLimit)
	if err == nil {
		s, err = quoteShell(s)
	}
	return expanded("command", s, err)
}

// expandURL expands an HTTP url template. Caller values and secrets are
// escaped for the part of the URL they land in; see escapeURL.
func expandURL(text string, job Job) (string, error) {
	s, err := render("action.url", text, job, true, TemplateTimeLimit)
	if err == nil {
		s, err = escapeURL(s)
	}
	return expanded("url", s, err)
}

// expandBody expands an HTTP body template sent with Content-Type ct
// (typed: the action sets one). Caller values and secrets are escaped for
// the body's format; see escapeBody.
func expandBody(text string, job Job, ct string, typed bool) (string, error) {
	s, err := render("action.body", text, job, true, TemplateTimeLimit)
	if err == nil {
		s, err = escapeBody(s, bodyFormat(ct, typed, s))
	}
	return expanded("body", s, err)
}

// expanded checks the final text of template name against
// tmpl.OutputLimit and words an error.
func expanded(name, s string, err error) (string, error) {
	if err == nil && len(s) > tmpl.OutputLimit {
		err = tmpl.ErrOutput
	}
	if err == nil {
		return s, nil
	}
	var me *model.Error
	if errors.As(err, &me) {
		err = errors.New(strings.TrimPrefix(me.Message, "bad template: "))
	}
	return "", &templateError{name: name, err: err}
}

// templateError is an error expanding the template of an action's field.
type templateError struct {
	name string
	err  error
}

func (e *templateError) Error() string { return "bad " + e.name + " template: " + e.err.Error() }
func (e *templateError) Unwrap() error { return e.err }
