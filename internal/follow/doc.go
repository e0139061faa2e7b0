// Package follow waits on a cluster for what ax's commands wait for:
// an instance to its end, its output printed as it comes (trigger and
// submit -wait, instance log -f), and an operator's decision on an
// approval request; through lost connections and leader changes. The
// end of an instance that did not succeed is an *OutcomeError, whose
// Code is ax's exit status.
package follow
