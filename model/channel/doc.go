// Package channel holds the notification channels' wire types: a named
// channel (where alerts go and which ones), its validation with errors
// naming the field, and the redaction of URLs that may carry a
// credential. It depends on nothing of ax but model (errors, names,
// severities, times).
package channel
