package model

// What a task write would do, as a dry run answers it (TaskPlan.Op).
const (
	PlanCreate    = "create"
	PlanUpdate    = "update"
	PlanUnchanged = "unchanged"
)

// TaskPlan is the answer to a dry run of a task write (PUT
// /v1/tasks/{name}?dryRun=true): what the write would do, judged as the
// write itself would be, with nothing written.
type TaskPlan struct {
	Name string `json:"name"`
	// Op is create, update or unchanged.
	Op string `json:"op"`
	// Version is the task's current version (0 when Op is create).
	Version uint64 `json:"version"`
	// Task is the definition as the write would store it: normalized,
	// defaults filled in, paused as the write would leave it; its server
	// fields are unset.
	Task *Task `json:"task"`
	// Current is the stored definition (absent when Op is create).
	Current *Task `json:"current,omitempty"`
}
