package model

import "strings"

// IsNotifyURL reports whether a policy.notify entry is an ad-hoc webhook
// URL (http:// or https://) rather than a channel name.
func IsNotifyURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

// Notification is the JSON body a webhook channel (or a policy.notify URL)
// receives for one alert transition.
type Notification struct {
	// Event is firing or resolved.
	Event string `json:"event"`
	Alert Alert  `json:"alert"`
	// Subject is the one-line summary (the email subject).
	Subject string `json:"subject"`
	// Text is the readable message (the email body).
	Text string `json:"text"`
	// Link opens the console on the alert's subject: the failed
	// instance, the task, or the overview.
	Link string `json:"link,omitempty"`
	// Failure describes the failed instance of an instance_failed alert.
	Failure *FailureReport `json:"failure,omitempty"`
	// Node is the node that sent it.
	Node string `json:"node,omitempty"`
}

// Failure classes: what made an attempt fail.
const (
	FailureExit     = "exit"      // a shell or SDK action ended with a non-zero exit
	FailureTimeout  = "timeout"   // it ran past its timeout and was killed
	FailureLost     = "lost"      // its executor stopped renewing the lease (died, cut off)
	FailureHTTP4xx  = "http_4xx"  // an HTTP action was answered 4xx
	FailureHTTP5xx  = "http_5xx"  // an HTTP action was answered 5xx
	FailureHTTPConn = "http_conn" // an HTTP action got no answer (connection, DNS, TLS)
	FailureError    = "error"     // the action could not run (bad template, missing secret...)
	FailureStopped  = "stopped"   // an operator terminated or canceled it
)

// FailureReport says what failed, how, and what to do about it: the
// rich part of an instance_failed notification, read from the state
// machine when the notification is sent.
type FailureReport struct {
	Task       string `json:"task"`
	InstanceID string `json:"instanceId"`
	FailedAt   Time   `json:"failedAt"`
	// Attempt is the failed attempt's number; MaxAttempts is
	// policy.maxRetries + 1.
	Attempt     int    `json:"attempt"`
	MaxAttempts int    `json:"maxAttempts"`
	Outcome     string `json:"outcome,omitempty"` // the attempt's: failed, timeout, lost, terminated...
	Class       string `json:"class"`             // one of the Failure* classes
	ExitCode    *int   `json:"exitCode,omitempty"`
	HTTPStatus  int    `json:"httpStatus,omitempty"`
	Error       string `json:"error,omitempty"`
	// Retryable says whether the policy allows retrying this failure
	// (policy.retryableExitCodes for exits; HTTP 5xx, 408, 429,
	// connection errors, timeouts and lost attempts are retryable);
	// RetriesExhausted that it was retryable but no retry was left.
	Retryable        bool     `json:"retryable"`
	RetriesExhausted bool     `json:"retriesExhausted"`
	Executor         string   `json:"executor,omitempty"`
	Host             string   `json:"host,omitempty"`
	Timeout          Duration `json:"timeout,omitempty"`
	// LogTail is the last lines (at most 20) of the attempt's output.
	LogTail []string `json:"logTail,omitempty"`
	// Suggestion is what to do, in one sentence.
	Suggestion string `json:"suggestion"`
	Link       string `json:"link,omitempty"`
}
