// Package config holds ax agent's settings, declared once: the table of
// Settings.table gives each setting its flag (name, default, help), its
// key in the config file (the flag's name with _ for -, so
// -advertise-http is advertise_http), the key's type, and the checks of
// its values. Settings.Register defines the flags, Settings.Parse reads
// the command line, the config file and the environment and checks every
// value whatever its source, and Settings.Config turns the result into
// an agent.Config (reading the TLS certificates, token and key files it
// names). deploy/ax-agent.hcl lists every key; a test keeps it in step.
//
// The config file is HCL, as Nomad and Consul agents are configured. The
// order is: the flags' defaults, then the file, then AX_TOKEN and
// AX_EXECUTOR_TOKEN, then the command line. File.Apply sets a flag from
// the file's value (written as the flag takes it) unless the command
// line set it.
//
// A file is checked whole before anything is applied: unknown keys (with
// a suggestion), blocks, values of the wrong type (a string where a
// number is wanted is not converted), durations, addresses, enumerations,
// counts and labels are refused with the file, line, column and key of
// each problem (Error). The same checks refuse a flag's value, naming the
// flag. Relative paths in path keys (data, restore, token_file,
// encrypt_key_file, tls_ca, tls_cert, tls_key) are resolved against the
// file's directory, so a file works whatever directory the agent starts
// in; relative paths given as flags stay relative to the working
// directory.
//
// The listener rules (a non-loopback address needs TLS or -insecure, an
// unspecified one an advertise address) are not here: agent.New applies
// them to every agent, however it is configured.
package config
