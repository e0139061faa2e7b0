package member

// StateInfo is what a state file (a saved snapshot, a Raft snapshot's
// state.bin) holds, by count: ax snapshot inspect prints it, and POST
// /v1/snapshot answers it for the state it restored.
type StateInfo struct {
	// Index and Term are the log position the state was applied up to
	// in the cluster it was saved from.
	Index    uint64 `json:"index"`
	Term     uint64 `json:"term"`
	Protocol int    `json:"protocol"`
	Tasks    int    `json:"tasks"`
	// Instances counts every instance kept; Pending those scheduled,
	// Active those leased or running.
	Instances int   `json:"instances"`
	Pending   int   `json:"pending"`
	Active    int   `json:"active"`
	Size      int64 `json:"size"` // bytes
	// ACLs: ACLs were bootstrapped (every request needs a token).
	ACLs bool `json:"acls"`
}
