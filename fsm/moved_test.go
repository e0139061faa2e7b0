package fsm

import "github.com/ax-scheduler/ax/fsm/command"

// The names the tests of this package used before the command types
// moved to package command (for the migration, as aliases.go).

const (
	maxText         = command.MaxText
	maxNoteIDs      = command.MaxNoteIDs
	completeVersion = command.CompleteBatchVersion
	maxStoredSecret = command.MaxStoredSecret
)

var (
	decodeSubmit        = command.DecodeSubmit
	decodeBatch         = command.DecodeBatch
	decodeCompleteBatch = command.DecodeCompleteBatch
)

// cmdNames holds every type this version knows, by name.
var cmdNames = func() map[CommandType]string {
	m := map[CommandType]string{}
	for _, t := range command.Types() {
		m[t] = t.String()
	}
	return m
}()
