package executors

import (
	"testing"
	"time"

	"github.com/ax-scheduler/ax/model"
)

func TestEffectiveTimeout(t *testing.T) {
	const def = time.Hour
	tests := []struct {
		name   string
		policy model.Timeout
		action model.Duration
		def    time.Duration
		want   model.Timeout
	}{
		{"unset takes the default", 0, 0, def, model.Timeout(def)},
		{"unset without a default", 0, 0, 0, 0},
		{"the task's own", model.Timeout(time.Minute), 0, def, model.Timeout(time.Minute)},
		{"none is no timeout", model.NoTimeout, 0, def, 0},
		{"an http action.timeout rules", 0, model.Duration(time.Second), def, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := model.Job{Policy: model.Policy{Timeout: tt.policy}, Action: model.Action{Timeout: tt.action}}
			effectiveTimeout(&job, tt.def)
			if job.Policy.Timeout != tt.want {
				t.Errorf("got %d, want %d", job.Policy.Timeout, tt.want)
			}
		})
	}
}
