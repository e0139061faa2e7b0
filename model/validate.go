package model

import (
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/ax-scheduler/ax/internal/jsonpath"
	"github.com/ax-scheduler/ax/model/tmpl"
	"github.com/ax-scheduler/ax/trigger"
)

var labelKeyRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,62}$`)

// ValidName reports whether s is a valid task or node name.
func ValidName(s string) bool { return validName(s) }

// ValidateName checks a task name and names field in the error.
func ValidateName(field, s string) error {
	if !validName(s) {
		return FieldErrorf(field, "%q is not a valid name: use 1-128 characters of a-z, 0-9, '.', '_', '-', starting with a letter or digit", s)
	}
	return nil
}

// ValidateLabel checks a label of a map named field (labels, a window's
// selector); the error names field.key.
func ValidateLabel(field, k, v string) error {
	if !labelKeyRE.MatchString(k) {
		return FieldErrorf(field+"."+k, "label key %q is not valid: 1-63 characters of letters, digits, '.', '_', '/', '-'", k)
	}
	if len(v) > 256 {
		return FieldErrorf(field+"."+k, "label value longer than 256 bytes")
	}
	return nil
}

// Normalize fills defaults that do not change meaning (timezone UTC,
// maxConcurrency 1, catchup "latest", catchupWindow 60s, overlap "queue",
// backoff "fixed", HTTP method GET) so stored definitions are explicit.
func (t *Task) Normalize() {
	if t.Trigger.Type == TriggerCron && t.Trigger.Timezone == "" {
		t.Trigger.Timezone = "UTC"
	}
	if t.Action.Type == ActionHTTP && t.Action.Method == "" {
		t.Action.Method = "GET"
	}
	t.Action.Method = strings.ToUpper(t.Action.Method)
	p := &t.Policy
	if p.MaxConcurrency == 0 {
		p.MaxConcurrency = 1
	}
	if p.Overlap == "" {
		p.Overlap = "queue"
	}
	if p.Catchup == "" {
		p.Catchup = "latest"
	}
	if p.CatchupWindow == 0 {
		p.CatchupWindow = Duration(60 * time.Second)
	}
	if p.Backoff == "" {
		p.Backoff = "fixed"
	}
	if len(t.Labels) == 0 {
		t.Labels = nil
	}
	if t.Rollout != nil {
		t.Rollout.normalize()
	}
}

// Validate checks every user-settable field of t and returns an *Error naming
// the first offending field. It does not look at server-set fields.
func (t *Task) Validate() error {
	if err := ValidateName("name", t.Name); err != nil {
		return err
	}
	if err := t.Trigger.validate(); err != nil {
		return err
	}
	if err := t.Trigger.validateTimes(); err != nil {
		return err
	}
	if err := t.Action.validate(); err != nil {
		return err
	}
	if err := t.Policy.validate(); err != nil {
		return err
	}
	if err := t.validateParams(); err != nil {
		return err
	}
	if t.Rollout != nil {
		if err := t.Rollout.validate(); err != nil {
			return err
		}
	}
	if len(t.Labels) > 64 {
		return FieldErrorf("labels", "at most 64 labels, got %d", len(t.Labels))
	}
	for _, k := range sortedKeys(t.Labels) {
		if err := ValidateLabel("labels", k, t.Labels[k]); err != nil {
			return err
		}
	}
	return nil
}

func (tr *Trigger) validate() error {
	only := func(allowed ...string) error {
		fields := []struct {
			name string
			set  bool
		}{{"expression", tr.Expression != ""}, {"timezone", tr.Timezone != ""}, {"every", tr.Every != 0},
			{"startAt", tr.StartAt != nil}, {"at", tr.At != nil}, {"delay", tr.Delay != 0},
			{"endAt", tr.EndAt != nil}, {"maxRuns", tr.MaxRuns != 0}, {"jitter", tr.Jitter != 0}}
		for _, f := range fields {
			if f.set && !slices.Contains(allowed, f.name) {
				return FieldErrorf("trigger."+f.name, "not allowed for a %s trigger", tr.Type)
			}
		}
		return nil
	}
	switch tr.Type {
	case TriggerCron:
		if err := only("expression", "timezone", "startAt", "endAt", "maxRuns", "jitter"); err != nil {
			return err
		}
		if tr.Expression == "" {
			return FieldErrorf("trigger.expression", "required for a cron trigger")
		}
		s, err := trigger.ParseCron(tr.Expression, tr.Timezone)
		if err != nil {
			return triggerError(err)
		}
		// A date that never exists (Feb 30) would never fire.
		if s.Next(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
			return FieldErrorf("trigger.expression", "%q never fires", tr.Expression)
		}
	case TriggerInterval:
		if err := only("every", "startAt", "endAt", "maxRuns", "jitter"); err != nil {
			return err
		}
		if tr.Every.Std() < time.Second {
			return FieldErrorf("trigger.every", "must be at least 1s, got %q", tr.Every.Std().String())
		}
	case TriggerOnce:
		if err := only("at", "delay", "jitter"); err != nil {
			return err
		}
		switch {
		case tr.At == nil && tr.Delay == 0:
			return FieldErrorf("trigger.at", "a once trigger needs at or delay")
		case tr.At != nil && tr.Delay != 0:
			return FieldErrorf("trigger.delay", "give at or delay, not both")
		case tr.Delay < 0:
			return FieldErrorf("trigger.delay", "must not be negative")
		}
	case TriggerEvent:
		if err := only(); err != nil {
			return err
		}
	case "":
		return FieldErrorf("trigger.type", "required: one of cron, interval, once, event")
	default:
		return FieldErrorf("trigger.type", "unknown trigger type %q: use cron, interval, once or event", tr.Type)
	}
	// startAt, endAt, maxRuns and jitter (a cron expression's period in
	// UTC, so that the answer depends on no zone database).
	s, _ := (&Trigger{Type: tr.Type, Expression: tr.Expression, Every: tr.Every}).schedule()
	if err := trigger.CheckLimits(s, tr.StartAt.Or(), tr.EndAt.Or(), tr.MaxRuns, tr.Jitter.Std()); err != nil {
		return triggerError(err)
	}
	return tr.validateCalendars(s)
}

// MaxTriggerCalendars bounds trigger.calendars.
const MaxTriggerCalendars = 10

// validateCalendars checks trigger.calendars and onExcluded (whether the
// calendars exist is the state machine's to say): names, no repeats, not
// on an event trigger, and a move (next, previous) only for a trigger
// that fires at most daily (trigger.CheckExclude, on s, the schedule in
// UTC).
func (tr *Trigger) validateCalendars(s trigger.Schedule) error {
	switch {
	case len(tr.Calendars) == 0 && tr.OnExcluded != "":
		return FieldErrorf("trigger.onExcluded", "needs trigger.calendars")
	case len(tr.Calendars) == 0:
		return nil
	case tr.Type == TriggerEvent:
		return FieldErrorf("trigger.calendars", "not allowed for an event trigger")
	case len(tr.Calendars) > MaxTriggerCalendars:
		return FieldErrorf("trigger.calendars", "at most %d calendars, got %d", MaxTriggerCalendars, len(tr.Calendars))
	}
	for i, n := range tr.Calendars {
		f := "trigger.calendars[" + strconv.Itoa(i) + "]"
		if err := ValidateName(f, n); err != nil {
			return err
		}
		if slices.Contains(tr.Calendars[:i], n) {
			return FieldErrorf(f, "%q is listed twice", n)
		}
	}
	return triggerError(trigger.CheckExclude(s, tr.OnExcluded))
}

var httpMethods = map[string]bool{"GET": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "HEAD": true, "OPTIONS": true}

var envKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (a *Action) validate() error {
	switch a.Type {
	case ActionShell:
		if strings.TrimSpace(a.Command) == "" {
			return FieldErrorf("action.command", "required for a shell action")
		}
		if err := checkTemplate("action.command", a.Command); err != nil {
			return err
		}
		for _, k := range sortedKeys(a.Env) {
			if !envKeyRE.MatchString(k) {
				return FieldErrorf("action.env."+k, "%q is not a valid environment variable name", k)
			}
			if err := a.Env[k].validate("action.env." + k); err != nil {
				return err
			}
		}
		if a.URL != "" || a.Method != "" || a.Body != "" || len(a.Headers) > 0 || a.Handler != "" {
			return FieldErrorf("action", "a shell action takes command, env and workdir only")
		}
		if a.ResultFrom != "" {
			return FieldErrorf("action.resultFrom", "only an http action takes resultFrom (a shell action writes its result to $AX_RESULT_FILE)")
		}
	case ActionHTTP:
		if a.URL == "" {
			return FieldErrorf("action.url", "required for an http action")
		}
		if err := checkTemplate("action.url", a.URL); err != nil {
			return err
		}
		if !strings.Contains(a.URL, "{{") {
			u, err := url.Parse(a.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return FieldErrorf("action.url", "%q is not an absolute http(s) URL", a.URL)
			}
		}
		if a.Method != "" && !httpMethods[strings.ToUpper(a.Method)] {
			return FieldErrorf("action.method", "unknown HTTP method %q", a.Method)
		}
		if err := checkTemplate("action.body", a.Body); err != nil {
			return err
		}
		for _, k := range sortedKeys(a.Headers) {
			if err := a.Headers[k].validate("action.headers." + k); err != nil {
				return err
			}
		}
		if a.Timeout < 0 {
			return FieldErrorf("action.timeout", "must not be negative")
		}
		if err := jsonpath.CheckPointer(a.ResultFrom); err != nil {
			return FieldErrorf("action.resultFrom", "%v", err)
		}
		if a.Command != "" || len(a.Env) > 0 || a.Workdir != "" || a.Handler != "" {
			return FieldErrorf("action", "an http action takes method, url, headers, body and timeout only")
		}
	case ActionSDK:
		if err := ValidateName("action.handler", a.Handler); err != nil {
			return err
		}
		if a.Command != "" || a.URL != "" || a.Body != "" || a.ResultFrom != "" {
			return FieldErrorf("action", "an sdk action takes handler only")
		}
	case "":
		return FieldErrorf("action.type", "required: one of shell, http, sdk")
	default:
		return FieldErrorf("action.type", "unknown action type %q: use shell, http or sdk", a.Type)
	}
	return nil
}

func (p *Policy) validate() error {
	switch {
	case p.MaxRetries < 0 || p.MaxRetries > 100:
		return FieldErrorf("policy.maxRetries", "must be between 0 and 100, got %d", p.MaxRetries)
	case p.Priority < -MaxPriority || p.Priority > MaxPriority:
		return FieldErrorf("policy.priority", "must be between %d and %d, got %d", -MaxPriority, MaxPriority, p.Priority)
	case p.Pool != "" && !ValidName(p.Pool):
		return ValidateName("policy.pool", p.Pool)
	case p.Shards < 0 || p.Shards > MaxShards:
		return FieldErrorf("policy.shards", "must be between 1 and %d, got %d", MaxShards, p.Shards)
	case p.Broadcast && p.Shards > 0:
		return FieldErrorf("policy.shards", "a broadcast runs one shard per executor: set shards or broadcast, not both")
	case !oneOf(p.ShardFailure, "", ShardFailFast, ShardFinish):
		return FieldErrorf("policy.shardFailure", "unknown shardFailure %q: use fail-fast or finish", p.ShardFailure)
	case p.ShardFailure != "" && !p.Sharded():
		return FieldErrorf("policy.shardFailure", "applies to sharded tasks only (policy.shards or policy.broadcast)")
	case p.RetryInterval < 0:
		return FieldErrorf("policy.retryInterval", "must not be negative")
	case p.MaxRetryInterval < 0:
		return FieldErrorf("policy.maxRetryInterval", "must not be negative")
	case p.Timeout < 0 && p.Timeout != NoTimeout:
		return FieldErrorf("policy.timeout", "must not be negative (\"none\" for no timeout)")
	case p.MaxConcurrency < 0 || p.MaxConcurrency > 1_000_000:
		return FieldErrorf("policy.maxConcurrency", "must be between 1 and 1000000, got %d", p.MaxConcurrency)
	case p.CatchupWindow < 0:
		return FieldErrorf("policy.catchupWindow", "must not be negative")
	case p.Retention < 0:
		return FieldErrorf("policy.retention", "must not be negative")
	}
	if err := p.RateLimit.validate("policy.rateLimit"); err != nil {
		return err
	}
	if !oneOf(p.Backoff, "", "fixed", "exponential") {
		return FieldErrorf("policy.backoff", "unknown backoff %q: use fixed or exponential", p.Backoff)
	}
	if !oneOf(p.Overlap, "", "queue", "skip", OverlapReplace) {
		return FieldErrorf("policy.overlap", "unknown overlap %q: use queue, skip or replace", p.Overlap)
	}
	if !oneOf(p.Catchup, "", "all", "latest", "none") {
		return FieldErrorf("policy.catchup", "unknown catchup %q: use all, latest or none", p.Catchup)
	}
	if !oneOf(p.Approval, "", "before_run") {
		return FieldErrorf("policy.approval", "unknown approval %q: use before_run", p.Approval)
	}
	for _, c := range p.RetryableExitCodes {
		if c < 1 || c > 255 {
			return FieldErrorf("policy.retryableExitCodes", "exit code %d out of range 1-255", c)
		}
	}
	if err := checkTemplate("policy.idempotencyKey", p.IdempotencyKey); err != nil {
		return err
	}
	if p.IdempotencyKey != "" {
		if err := checkKeyTemplate("policy.idempotencyKey", p.IdempotencyKey); err != nil {
			return err
		}
	}
	for i, n := range p.Notify {
		if !IsNotifyURL(n) && validName(n) {
			continue // a channel's name (PUT /v1/channels/{name})
		}
		u, err := url.Parse(n)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return FieldErrorf("policy.notify", "entry %d: %q is neither an absolute http(s) URL nor a channel name", i, n)
		}
	}
	for _, n := range p.OnFailure {
		if err := ValidateName("policy.onFailure", n); err != nil {
			return err
		}
	}
	for _, n := range p.DependsOn {
		if err := ValidateName("policy.dependsOn", n); err != nil {
			return err
		}
	}
	return p.validateProto4()
}

// validateProto4 checks the policy fields of protocol 4.
func (p *Policy) validateProto4() error {
	if !oneOf(p.OnUpstreamFailure, "", "wait", "skip", "fail") {
		return FieldErrorf("policy.onUpstreamFailure", "unknown onUpstreamFailure %q: use wait, skip or fail", p.OnUpstreamFailure)
	}
	if (p.OnUpstreamFailure == "skip" || p.OnUpstreamFailure == "fail") && len(p.DependsOn) == 0 {
		return FieldErrorf("policy.onUpstreamFailure", "onUpstreamFailure %s needs policy.dependsOn", p.OnUpstreamFailure)
	}
	switch {
	case p.MaxQueued < 0 || p.MaxQueued > MaxMaxQueued:
		return FieldErrorf("policy.maxQueued", "must be between 1 and %d, got %d (unset: %d)", MaxMaxQueued, p.MaxQueued, DefaultMaxQueued)
	case p.KeepSuccessful < 0 || p.KeepSuccessful > MaxKeep:
		return FieldErrorf("policy.keepSuccessful", "must be between 1 and %d, got %d (unset: no count limit)", MaxKeep, p.KeepSuccessful)
	case p.KeepFailed < 0 || p.KeepFailed > MaxKeep:
		return FieldErrorf("policy.keepFailed", "must be between 1 and %d, got %d (unset: no count limit)", MaxKeep, p.KeepFailed)
	case p.Deadline != nil:
		if err := p.Deadline.validate(); err != nil {
			return err
		}
	}
	switch {
	case p.MaxQueued != 0 && (p.Overlap == "skip" || p.Overlap == OverlapReplace):
		return FieldErrorf("policy.maxQueued", "applies to overlap queue only, not %s", p.Overlap)
	case len(p.OnSuccess) > MaxOnSuccess:
		return FieldErrorf("policy.onSuccess", "at most %d entries, got %d", MaxOnSuccess, len(p.OnSuccess))
	}
	for i, c := range p.OnSuccess {
		f := "policy.onSuccess[" + itoa(i) + "]"
		if err := ValidateName(f+".task", c.Task); err != nil {
			return err
		}
		if len(c.Params) > MaxChainParams {
			return FieldErrorf(f+".params", "at most %d params, got %d", MaxChainParams, len(c.Params))
		}
		for _, k := range sortedKeys(c.Params) {
			switch {
			case !ValidParamName(k):
				return FieldErrorf(f+".params", "%q is not a parameter name", k)
			case k == ParamParentTask || k == ParamParentInstance:
				return FieldErrorf(f+".params."+k, "%s is set by ax to the succeeded instance's", k)
			case len(c.Params[k]) > MaxParamValue:
				return FieldErrorf(f+".params."+k, "longer than %d bytes", MaxParamValue)
			}
		}
	}
	return nil
}

func itoa(i int) string { return strconv.Itoa(i) }

// ParseTemplate parses text, the template of field ("action.command",
// "action.url", "action.body", "policy.idempotencyKey"), and checks it
// against the rules of package tmpl, a secret named by a valid name.
// Errors are *Error invalid_argument naming field.
func ParseTemplate(field, text string) (*template.Template, error) {
	t, _, err := tmpl.Parse(field, text, validName)
	if err != nil {
		return nil, FieldErrorf(field, "%v", err)
	}
	return t, nil
}

// checkTemplate checks s, the template of field, against the rules of
// ParseTemplate.
func checkTemplate(field, s string) error {
	if strings.Contains(s, "{{") {
		_, err := ParseTemplate(field, s)
		return err
	}
	if err := tmpl.CheckText(s); err != nil { // no action: nothing to parse
		return FieldErrorf(field, "%v", err)
	}
	return nil
}

func oneOf(s string, opts ...string) bool {
	for _, o := range opts {
		if s == o {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
