package tasks

import (
	"errors"
	"testing"

	"github.com/ax-scheduler/ax/model"
	"github.com/ax-scheduler/ax/model/live"
)

func TestLiveHub_NeverBlocks(t *testing.T) {
	h := newLiveHub()
	sub, err := h.subscribe(live.Filter{Task: "a"})
	if err != nil {
		t.Fatal(err)
	}
	other, _ := h.subscribe(live.Filter{Task: "b"})
	ev := func(task string) live.Event {
		return live.Event{Type: live.TypeTask, Task: &live.Task{Name: task}}
	}
	for range liveBuffer + 10 {
		h.publish(ev("a")) // must not block when the buffer is full
	}
	if got := len(sub.Events()); got != liveBuffer {
		t.Errorf("buffered: got %d, want %d", got, liveBuffer)
	}
	select {
	case <-sub.Lost():
	default:
		t.Error("the overflow was not signalled")
	}
	if len(other.Events()) != 0 || len(other.Lost()) != 0 {
		t.Error("a filtered-out subscriber got events")
	}
	sub.Close()
	sub.Close()
	other.Close()
	if h.active() {
		t.Error("subscribers left after Close")
	}
}

func TestLiveHub_Cap(t *testing.T) {
	h := newLiveHub()
	for i := range maxLiveSubs {
		if _, err := h.subscribe(live.Filter{}); err != nil {
			t.Fatalf("subscriber %d: %v", i, err)
		}
	}
	_, err := h.subscribe(live.Filter{})
	if !errors.Is(err, model.ErrUnavailable) {
		t.Errorf("over the cap: got %v, want unavailable", err)
	}
}
