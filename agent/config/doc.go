// Package config reads ax agent's config file: HCL, as Nomad and Consul
// agents are configured, decoded with gohcl into Agent.
//
// Each key is one of ax agent's flags with its dashes written as
// underscores (-advertise-http is advertise_http), so the file and the
// command line speak the same vocabulary and go through the same parsing:
// File.Apply sets a flag from the file's value unless the command line
// set it. The order is: the flags' defaults, then the file, then the
// command line.
//
// A file is checked whole before anything is applied: unknown keys (with
// a suggestion), blocks, values of the wrong type (a string where a
// number is wanted is not converted), durations, addresses, enumerations
// and labels are refused with the file, line, column and key of each
// problem (Error). Relative paths in path keys (data, restore, token_file,
// encrypt_key_file, tls_ca, tls_cert, tls_key) are resolved against the
// file's directory, so a file works whatever directory the agent starts
// in; relative paths given as flags stay relative to the working
// directory.
package config
