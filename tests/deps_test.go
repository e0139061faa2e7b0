package tests

// The tests run the ax binary that TestMain builds, which go test's cache
// cannot see; importing the agent (and so nearly all of ax) makes a change
// to it invalidate cached results of this package.
import _ "github.com/ax-scheduler/ax/agent"
