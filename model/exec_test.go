package model

import "testing"

func TestCapabilities_Runs(t *testing.T) {
	shell, http, greet := Action{Type: ActionShell}, Action{Type: ActionHTTP}, Action{Type: ActionSDK, Handler: "greet"}
	tests := []struct {
		name                string
		caps                *Capabilities
		wantShell, wantHTTP bool
		wantGreet           bool
	}{
		{"nil: an old executor", nil, true, true, false},
		{"sdk worker", &Capabilities{Handlers: []string{"greet"}}, false, false, true},
		{"shell only", &Capabilities{Shell: true}, true, false, false},
		{"everything", &Capabilities{Shell: true, HTTP: true, Handlers: []string{"x", "greet"}}, true, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := [3]bool{tt.caps.Runs(&shell), tt.caps.Runs(&http), tt.caps.Runs(&greet)}; got != [3]bool{tt.wantShell, tt.wantHTTP, tt.wantGreet} {
				t.Errorf("runs shell, http, greet: %v, want %v %v %v", got, tt.wantShell, tt.wantHTTP, tt.wantGreet)
			}
		})
	}
}
