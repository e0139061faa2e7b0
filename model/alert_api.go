package model

// AlertQuery selects alerts for GET /v1/alerts.
type AlertQuery struct {
	State  string // firing | resolved | "" (both)
	Task   string
	Rule   string
	Limit  int
	Cursor string // NextCursor of the previous page
}

// SilenceRequest is the body of POST /v1/silences: what to silence (a
// task, a rule, task labels; all that are given must match) and for how
// long (For from now, or Until).
type SilenceRequest struct {
	Task    string            `json:"task,omitempty"`
	Rule    string            `json:"rule,omitempty"`
	Labels  map[string]string `json:"labels,omitempty"`
	For     Duration          `json:"for,omitempty"`
	Until   Time              `json:"until,omitzero"`
	Comment string            `json:"comment,omitempty"`
}

// SilenceList answers GET /v1/silences: the silences in force.
type SilenceList struct {
	Silences []Silence `json:"silences"`
}
