// Package complete is shell completion built on a program's command
// table: Script is the bash, zsh or fish script, which calls the program
// back ("ax __complete -- WORDS"), and Completer finds the candidates
// for the word being typed: commands and subcommands, a command's flags
// from its own flag set (built, not run), and the values of some flags
// and arguments. Completions therefore follow the binary's own commands
// and flags.
package complete
