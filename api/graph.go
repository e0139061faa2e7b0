package api

import (
	"net/http"

	"github.com/ax-scheduler/ax/model/live"
)

func (s consoleRoutes) taskGraph(w http.ResponseWriter, r *http.Request) {
	s.taskIntRead(w, r, "depth", live.DefaultGraphDepth, live.MaxGraphDepth,
		func(ctx contextT, name string, depth int) (any, error) {
			return s.b.console.TaskGraph(ctx, name, depth)
		})
}
