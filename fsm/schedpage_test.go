package fsm

import (
	"fmt"
	"slices"
	"testing"
)

// TestFSM_TaskSchedulePage: reading the tasks a page at a time yields
// each task once, in name order, whatever the page size, and the same
// tasks as TaskSchedules.
func TestFSM_TaskSchedulePage(t *testing.T) {
	f := newTestFSM(t)
	a := &applier{t: t, f: f}
	var want []string
	for i := range 7 {
		name := fmt.Sprintf("task-%d", i)
		a.apply(cmd(t, CmdPutTask, "", t0, PutTask{Task: cronTask(name, "* * * * *")}))
		want = append(want, name)
	}
	all, err := f.TaskSchedules()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ts := range all {
		names = append(names, ts.Task.Name)
	}
	if !slices.Equal(names, want) {
		t.Fatalf("TaskSchedules: %v, want %v", names, want)
	}
	cases := []struct {
		limit int
		pages int // reads until one returns ""
	}{
		{limit: 1, pages: 7},
		{limit: 3, pages: 3},
		{limit: 7, pages: 1}, // exactly the tasks: nothing is left after them
		{limit: 100, pages: 1},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.limit), func(t *testing.T) {
			var got []string
			after, pages := "", 0
			for {
				next, err := f.TaskSchedulePage(after, tc.limit, func(ts *TaskSchedule) { got = append(got, ts.Task.Name) })
				if err != nil {
					t.Fatal(err)
				}
				pages++
				if next == "" {
					break
				}
				if next != got[len(got)-1] {
					t.Fatalf("page %d: continue after %q, want the last read %q", pages, next, got[len(got)-1])
				}
				after = next
			}
			if !slices.Equal(got, want) || pages != tc.pages {
				t.Errorf("read %v in %d pages, want %v in %d", got, pages, want, tc.pages)
			}
		})
	}
	// After a name that is not a task: from the next one.
	var got []string
	if _, err := f.TaskSchedulePage("task-2x", 2, func(ts *TaskSchedule) { got = append(got, ts.Task.Name) }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want[3:5]) {
		t.Errorf("after task-2x: %v, want %v", got, want[3:5])
	}
}
