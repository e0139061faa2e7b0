package tasks

import (
	"context"
	"slices"
	"strings"

	"github.com/ax-scheduler/ax/fsm"
	"github.com/ax-scheduler/ax/model/live"
)

// TaskGraph implements api.ConsoleBackend. No index links a task to the
// tasks naming it, so it reads every definition's links once (only those
// fields decoded: fsm.TaskLinks), walks them from the task both ways,
// depth links at most and live.MaxGraphNodes tasks in all, then reads the
// newest run of the tasks in the graph.
func (c *Console) TaskGraph(ctx context.Context, name string, depth int) (*live.TaskGraph, error) {
	if _, err := c.state.GetTask(name); err != nil {
		return nil, err
	}
	links, err := c.state.TaskLinks()
	if err != nil {
		return nil, err
	}
	tasks := make(map[string]*fsm.TaskLink, len(links))
	var edges []live.GraphEdge
	for i := range links {
		t := &links[i]
		tasks[t.Name] = t
		p := &t.Policy
		for _, d := range p.DependsOn {
			edges = append(edges, live.GraphEdge{From: d, To: t.Name, Kind: "dependsOn"})
		}
		for _, ch := range p.OnSuccess {
			edges = append(edges, live.GraphEdge{From: t.Name, To: ch.Task, Kind: "onSuccess"})
		}
		for _, f := range p.OnFailure {
			edges = append(edges, live.GraphEdge{From: t.Name, To: f, Kind: "onFailure"})
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g := &live.TaskGraph{Task: name, Depth: depth}
	level := map[string]int{name: 0}
	order := []string{name}
	// walk goes one way (step +1 downstream, -1 upstream), breadth first.
	walk := func(step int) {
		frontier := []string{name}
		for d := 1; len(frontier) > 0; d++ {
			var next []string
			for _, n := range frontier {
				for _, e := range edges {
					to := e.To
					if step < 0 {
						if e.To != n {
							continue
						}
						to = e.From
					} else if e.From != n {
						continue
					}
					if _, seen := level[to]; seen {
						continue
					}
					if d > depth || len(level) >= live.MaxGraphNodes {
						g.Truncated = true
						continue
					}
					level[to] = d * step
					order = append(order, to)
					next = append(next, to)
				}
			}
			frontier = next
		}
	}
	walk(1)
	walk(-1)
	last, err := c.state.LastRuns(order)
	if err != nil {
		return nil, err
	}
	for _, n := range order {
		node := live.GraphNode{Name: n, Level: level[n]}
		if t, ok := tasks[n]; ok {
			node.Paused = t.Paused
			if r, ok := last[n]; ok {
				node.LastRun = &r
			}
		} else {
			node.Missing = true
		}
		g.Nodes = append(g.Nodes, node)
	}
	slices.SortStableFunc(g.Nodes, func(x, y live.GraphNode) int {
		if x.Level != y.Level {
			return x.Level - y.Level
		}
		return strings.Compare(x.Name, y.Name)
	})
	g.Edges = []live.GraphEdge{}
	for _, e := range edges {
		_, a := level[e.From]
		_, b := level[e.To]
		if a && b && !slices.Contains(g.Edges, e) {
			g.Edges = append(g.Edges, e)
		}
	}
	return g, nil
}
