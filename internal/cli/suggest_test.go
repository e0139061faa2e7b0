package cli

import "testing"

func TestClosest(t *testing.T) {
	t.Parallel()
	known := []string{"agent", "status", "task", "trigger", "submit", "instance", "version"}
	for _, tc := range []struct{ name, want string }{
		{"tsk", "task"},
		{"taks", "task"},
		{"instnace", "instance"},
		{"triger", "trigger"},
		{"verison", "version"},
		{"foo", ""}, // not "pool": two edits of three letters
		{"lst", ""},
		{"xy", ""}, // too short to be a typo of anything
		{"deploy", ""},
	} {
		if got := Closest(tc.name, known); got != tc.want {
			t.Errorf("Closest(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got, want := DidYouMean("tsk", known), `; did you mean "task"?`; got != want {
		t.Errorf("DidYouMean = %q, want %q", got, want)
	}
	if got := DidYouMean("foo", known); got != "" {
		t.Errorf("DidYouMean(foo) = %q, want nothing", got)
	}
}
