package api

import (
	"time"
)

// Timings of the live streams (Server fields, changed by tests).
const (
	defaultKeepalive = 15 * time.Second
	defaultLogPoll   = 300 * time.Millisecond
	defaultLiveFlush = 100 * time.Millisecond
)
