package live

import (
	"strconv"
	"strings"
	"time"

	"github.com/ax-scheduler/ax/model"
)

// Wire types of the task page's dependency graph (GET
// /v1/tasks/{name}/graph) and paged fires (GET /v1/tasks/{name}/fires).

// Bounds of GET /v1/tasks/{name}/graph.
const (
	// DefaultGraphDepth and MaxGraphDepth bound ?depth=, the links
	// followed upstream and downstream.
	DefaultGraphDepth = 3
	MaxGraphDepth     = 10
	// MaxGraphNodes bounds the tasks a graph holds.
	MaxGraphNodes = 200
)

// TaskGraph is the answer of GET /v1/tasks/{name}/graph: the tasks linked
// to one by policy.dependsOn, policy.onSuccess and policy.onFailure,
// upstream and downstream, up to Depth links away, each with its newest
// instance.
type TaskGraph struct {
	Task  string      `json:"task"`
	Depth int         `json:"depth"`
	Nodes []GraphNode `json:"nodes"`
	Edges []GraphEdge `json:"edges"`
	// Truncated says that more tasks are linked than the graph holds
	// (beyond Depth, or past MaxGraphNodes).
	Truncated bool `json:"truncated"`
}

// GraphNode is a task of a TaskGraph. Level is its distance from the
// task: negative upstream, positive downstream, 0 the task itself.
type GraphNode struct {
	Name  string `json:"name"`
	Level int    `json:"level"`
	// Missing: a definition names the task but it does not exist.
	Missing bool      `json:"missing,omitempty"`
	Paused  bool      `json:"paused,omitempty"`
	LastRun *RunBrief `json:"lastRun"`
}

// GraphEdge is a link of a TaskGraph: To runs after From. Kind is the
// field of the definition that makes it: dependsOn (To's), onSuccess or
// onFailure (From's).
type GraphEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
	Kind string `json:"kind"`
}

// FireCursor is where a page of GET /v1/tasks/{name}/fires starts: after
// the fire time After, Shown fires having been listed before it (they
// count against the task's maxRuns). The zero value starts from now.
type FireCursor struct {
	After time.Time
	Shown int
}

// String is the cursor as the API writes it: "<After in Unix ns>.<Shown>".
func (c FireCursor) String() string {
	return strconv.FormatInt(c.After.UnixNano(), 10) + "." + strconv.Itoa(c.Shown)
}

// ParseFireCursor reads a cursor String wrote; "" is from now.
func ParseFireCursor(v string) (FireCursor, error) {
	if v == "" {
		return FireCursor{}, nil
	}
	ns, shown, ok := strings.Cut(v, ".")
	t, err1 := strconv.ParseInt(ns, 10, 64)
	k, err2 := strconv.Atoi(shown)
	if !ok || err1 != nil || err2 != nil || t <= 0 || k <= 0 {
		return FireCursor{}, model.FieldErrorf("cursor", "not a cursor of this list: %q", v)
	}
	return FireCursor{After: time.Unix(0, t).UTC(), Shown: k}, nil
}
