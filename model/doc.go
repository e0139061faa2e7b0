// Package model holds ax's wire types: tasks, triggers, actions, policies,
// cluster status and the error shape of the HTTP API. It is shared by the
// api, client, fsm and agent packages and depends on nothing else of ax but
// the pure trigger package (for validating schedules) and model/tmpl (the
// template language of task fields, whose rules it applies).
//
// Times on the wire are RFC 3339 in UTC with milliseconds; durations are Go
// duration strings ("5m", "1h30m").
package model
