package chaos

import (
	"testing"
	"time"
)

func TestSlowdownFactor(t *testing.T) {
	tests := []struct {
		name    string
		samples []float64
		want    float64
	}{
		{"none", nil, 1},
		{"faster than the base", []float64{0.8, 0.9}, 1},
		{"the median, not the worst", []float64{1, 1, 1.5, 2, 2.5, 9}, 1.5},
		{"capped", []float64{8, 9, 10}, maxSlowdown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := slowdownFactor(tt.samples); got != tt.want {
				t.Fatalf("slowdownFactor(%v) = %v, want %v", tt.samples, got, tt.want)
			}
		})
	}
	b := Bounds{Firing: 4 * time.Second, Dispatch: 5 * time.Second}.scaled(1.5)
	if b.Firing != 6*time.Second || b.Dispatch != 7500*time.Millisecond {
		t.Fatalf("scaled(1.5) = %+v", b)
	}
}
