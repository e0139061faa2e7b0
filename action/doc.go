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
// and always the header X-AX-Request-ID: <ExecutionID>. It succeeds on a
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
//
// A template that does not parse or execute fails the attempt without
// retry; Check expands a task's templates with sample values, so that most
// such errors are refused when the task is applied. Params and Payload come
// from API callers and are untrusted: in a shell command they are quoted
// for the place where they stand, so that no value can run commands:
//
//	echo {{.Params.name}}          becomes  echo 'O'\''Brien'
//	echo "Hello {{.Params.name}}"  becomes  echo "Hello O'Brien" (with \ $ ` " escaped)
//	echo 'id={{.Params.name}}'     becomes  echo 'id=O'\''Brien'
//
// Places where no quoting is safe (inside `...`, ${...}, $((...)) or
// $'...', a here-document, right after a backslash or a $, after a case
// statement inside $(...)) fail the attempt; read "$AX_PARAM_NAME" there. In an HTTP url or body values are inserted as
// they are: use {{urlquery .Params.x}} in a query string.
package action
