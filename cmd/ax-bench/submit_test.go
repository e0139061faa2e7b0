package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

func TestSubmit_BadSDKFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"submit", "-sdk-linger", "0"}, "-sdk-linger"},
		{[]string{"submit", "-sdk-linger", "1ms,soon"}, "-sdk-linger"},
		{[]string{"submit", "-sdk-inflight", "0"}, "-sdk-inflight"},
		{[]string{"submit", "-sdk-goroutines", "64,0"}, "-sdk-goroutines"},
		{[]string{"submit", "-sdk-batch", "0"}, "-sdk-batch"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			err := run(context.Background(), tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

func TestParseLingers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // fmt of the lingers, or "error"
	}{
		{"1ms", "[1ms]"},
		{"none, 500us,2ms", "[-1ns 500µs 2ms]"},
		{"0", "error"},
		{"-1ms", "error"},
		{"", "error"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseLingers("-sdk-linger", tc.in)
			s := fmt.Sprint(got)
			if err != nil {
				s = "error"
			}
			if s != tc.want {
				t.Errorf("got %s (%v), want %s", s, err, tc.want)
			}
		})
	}
}
