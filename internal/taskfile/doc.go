// Package taskfile reads, compares and writes task definition files, as
// ax task apply and ax task export use them: JSON or YAML files,
// directories and stdin, read whole and checked before anything is
// written, every problem reported at its file and line (Load); the
// definition a file holds (Spec) and its export (Write, WriteDir); a
// unified diff of two definitions; and applying definitions to a cluster,
// with dry runs and pruning (Applier).
package taskfile
