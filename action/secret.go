package action

import (
	"fmt"

	"github.com/ax-scheduler/ax/model"
)

// lookupSecret returns the value of the secret name delivered with job.
func lookupSecret(job Job, name string) (string, error) {
	s, ok := job.Secrets[name]
	if !ok {
		return "", fmt.Errorf("secret %q was not delivered with the job", name)
	}
	return s, nil
}

// valueText returns v's text: its Text, or the secret it names.
func valueText(job Job, v model.Value) (string, error) {
	if v.FromSecret == "" {
		return v.Text, nil
	}
	return lookupSecret(job, v.FromSecret)
}
