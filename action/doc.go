// Package action runs one attempt of a job on an ax executor. The control
// plane never runs user work: an executor leases an instance, builds a Job
// from it and calls Runner.Run, then reports the Result (success, whether a
// retry is allowed, exit code or HTTP status, error, output). The package
// is a pure library: it does not talk to ax servers.
//
// # Actions
//
// A shell action runs `/bin/sh -c command` in its own process group, in
// the action's workdir, with the executor's environment plus the action's
// Env, the Job's Env and AX_PARAM_<NAME> (see ParamEnv), AX_PAYLOAD,
// AX_INSTANCE_ID, AX_EXECUTION_ID, AX_SCHEDULED_AT, AX_TASK and AX_ATTEMPT.
// stdout and stderr go into one stream; the Result keeps its last
// OutputLimit bytes. It succeeds on exit 0. A failure is retryable if the
// policy lists no retryableExitCodes, else only for the listed codes. On
// timeout or cancellation the whole group gets SIGTERM, then SIGKILL after
// Runner.KillGrace; when the shell exits by itself, whatever it left
// running in its group is killed. Run returns once no process of the group
// is alive. (A process that puts itself in another group, with setsid for
// example, is out of reach.)
//
// An HTTP action sends method (default GET) to url with headers and body,
// and always the headers X-AX-Request-ID: <InstanceID> (the same on every
// attempt, so that a receiver can recognise a retry of work it has done)
// and X-AX-Attempt: <Attempt>. It succeeds on a
// 2xx status after redirects. 5xx, 429, timeouts and connection errors are
// retryable; other statuses and bad URLs are not. The Result keeps the
// first OutputLimit bytes of the response body.
//
// An SDK action calls the Handler registered under its name in
// Runner.Handlers. nil is success; an error is a retryable failure unless
// it wraps ErrPermanent (see Permanent). The timeout is applied through the
// handler's context; a handler that does not return within KillGrace after
// its context is done is abandoned: Run returns TimedOut (or Canceled)
// while the handler's goroutine runs on, and what it returns or writes
// later is dropped. Output(ctx) is the handler's output stream.
//
// The timeout of an attempt is the action's timeout, else the policy's
// (HTTP: else 60s). Cancelling Run's context stops the attempt the same way
// and reports Canceled, which is not retryable: the caller knows why it
// canceled.
//
// # Templates
//
// A shell command, an HTTP url and an HTTP body are text/template
// templates (missing keys expand to empty values) over:
//
//	{{.ScheduledAt}}   fire time, RFC 3339 in UTC with milliseconds
//	{{.Date}}          scheduled date, YYYY-MM-DD in the job's timezone
//	{{.Yesterday}}     the day before {{.Date}}
//	{{.Params.x}}      param x
//	{{.Payload}}       payload: a JSON string as its value, else its JSON text
//	{{.Task}} {{.InstanceID}} {{.ExecutionID}} {{.Attempt}}
//	{{secret "name"}}  the value of secret name (Job.Secrets)
//	{{raw X}}          X inserted as it is, without escaping (not in a shell command)
//
// Rendering is bounded (see package model/tmpl): no range, template,
// define, block, break or continue; only the functions and, or, not, eq,
// ne, lt, le, gt, ge, len, index, slice, print, printf, println, html, js,
// urlquery, raw and secret (printf's widths and precisions at most 1024);
// at most 64 KiB of output and TemplateTimeLimit (100 ms) per template,
// tried once more with ten times the limit when over it (a busy machine
// can stall any rendering; a rendering over both limits is retryable).
// A template that does not parse, breaks a rule, runs over the output
// limit or fails to execute fails the attempt without retry; Check expands a task's
// templates with sample values, so that most such errors are refused when
// the task is applied.
//
// Params, Payload and secrets are marked values: a template compares them
// as they are ({{if eq .Params.mode "full"}}), but where one lands in the
// output it is escaped for its position, the way html/template escapes
// values for HTML, so that no value changes the structure of what the
// template builds.
//
// In a shell command a value is quoted for the place where it stands, so
// that no value can run commands:
//
//	echo {{.Params.name}}          becomes  echo 'O'\''Brien'
//	echo "Hello {{.Params.name}}"  becomes  echo "Hello O'Brien" (with \ $ ` " escaped)
//	echo 'id={{.Params.name}}'     becomes  echo 'id=O'\''Brien'
//
// Places where no quoting is safe (inside `...`, ${...}, $((...)) or
// $'...', a here-document, right after a backslash or a $, after a case
// statement inside $(...)) fail the attempt; read "$AX_PARAM_NAME" there
// (or an env entry {"fromSecret": "name"} for a secret). raw is refused in
// a shell command.
//
// In an HTTP url a value is escaped for the part of the URL it stands in:
// url.PathEscape in the path ('/', '?', '#' and '%' escaped, so a value is
// one path segment or part of one), query escaping in the query, fragment
// escaping in the fragment. {{urlquery X}} of a value is inserted as it is
// (it is escaped already). A value may not form the scheme or the host:
// anything before the first '/', '?' or '#' after "://" comes from the
// template text, else the template is refused (at apply time by Check,
// else the attempt fails); nor may values alone make a path segment that
// is empty, "." or ".." (the attempt fails). {{raw X}} lifts both rules.
//
// In an HTTP body, values are escaped for the body's format, from the
// action's Content-Type header:
//
//   - JSON (application/json, */*+json; or no Content-Type and a body that
//     starts with {, [, " or a value): inside a string literal a value is
//     escaped as string content; elsewhere it becomes a JSON string, except
//     a payload that is JSON but not a string, which is inserted as the JSON
//     value it is ({"order": {{.Payload}}}). A value right after a
//     backslash in a string is refused.
//   - application/x-www-form-urlencoded: query escaping.
//   - XML and HTML (*/xml, */*+xml, text/html): entity escaping.
//   - text/plain: as it is (declared plain text has no structure).
//   - anything else, or no Content-Type and a body that does not look like
//     JSON: a value is refused, so that nothing is inserted unescaped
//     silently; set a Content-Type, or use {{urlquery X}} or {{raw X}}.
//
// HTTP headers and env values are not templates: a literal string, or
// {"fromSecret": "name"} for a secret's value.
//
// # Results
//
// A successful attempt may publish a result, one JSON value of at most
// MaxResult (64 KiB) bytes, Result.Result: what a shell command wrote to
// the file named by $AX_RESULT_FILE (ResultEnv; private to the attempt,
// removed after it), an HTTP action's 2xx JSON response body (declared
// JSON or a body that parses; Action.ResultFrom, a JSON pointer, selects
// a part), what an SDK handler gave SetResult. A result that is not JSON,
// is too big or holds the value of a secret fails the attempt without
// retry, saying why; an HTTP body the action did not ask for (no
// resultFrom) is only noted in the output when it cannot be kept.
//
// Templates read the upstream tasks' results (Job.Upstream) as
// {{.Upstream.<task>.Result}}, {{.Upstream.<task>.Result.field}} and
// {{index .Upstream.<task>.Result.list 0}}: strings are marked values like
// params, other values their JSON text (JSON values in a JSON body).
// Reading a result or a field that is not there fails the attempt.
//
// # Secrets
//
// The leader delivers with each job the values of the secrets its action
// references (SecretRefs), in Job.Secrets. A secret that was not
// delivered fails the attempt, naming it. Run masks every secret value of
// at least redact.MinLen bytes (and its JSON-, URL- and Go-quoted forms and
// its lines) as redact.Mask in the output, live and kept, and in the error;
// see package action/redact.
package action
