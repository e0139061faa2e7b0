package model

// Pool is a shared pool of concurrency slots (protocol 8), as Airflow's
// pools: the instances of every task whose policy.pool names it hold at
// most Slots of them at once, on top of each task's maxConcurrency. An
// instance that finds its pool full waits BLOCKED (or is SKIPPED with
// overlap skip) and is started, oldest first among those whose task has
// a slot of its own free, when one frees. Version, the times, Busy,
// Queued and Tasks are the server's.
type Pool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Slots       int    `json:"slots"`
	// RateLimit bounds how often instances of the pool start, across
	// its tasks (RateLimit).
	RateLimit *RateLimit `json:"rateLimit,omitempty"`

	Version   uint64 `json:"version,omitempty"`
	CreatedAt *Time  `json:"createdAt,omitempty"`
	UpdatedAt *Time  `json:"updatedAt,omitempty"`
	UpdatedBy string `json:"updatedBy,omitempty"`
	// Busy counts the instances holding a slot, Queued those waiting for
	// one; Tasks lists the tasks whose policy.pool names it (reads).
	Busy   uint64   `json:"busy"`
	Queued uint64   `json:"queued"`
	Tasks  []string `json:"tasks,omitempty"`
}

// PoolList is the answer of GET /v1/pools.
type PoolList struct {
	Pools []Pool `json:"pools"`
}

// MaxPoolSlots bounds a pool's slots.
const MaxPoolSlots = 1_000_000

// Definition returns the pool without what the server sets.
func (p *Pool) Definition() Pool {
	return Pool{Name: p.Name, Description: p.Description, Slots: p.Slots, RateLimit: p.RateLimit}
}

// Validate checks the definition; errors name the field.
func (p *Pool) Validate() error {
	if err := ValidateName("name", p.Name); err != nil {
		return err
	}
	switch {
	case len(p.Description) > 1024:
		return FieldErrorf("description", "longer than 1024 bytes")
	case p.Slots < 1 || p.Slots > MaxPoolSlots:
		return FieldErrorf("slots", "must be between 1 and %d, got %d", MaxPoolSlots, p.Slots)
	}
	return p.RateLimit.validate("rateLimit")
}
