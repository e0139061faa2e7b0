package agent

import "github.com/ax-scheduler/ax/access"

// EncryptKeySize is the size of the key -encrypt-key-file holds: AES-256.
const EncryptKeySize = access.EncryptKeySize

// ReadEncryptKey reads a key file written by ax keygen (see
// access.ReadEncryptKey).
func ReadEncryptKey(path string) (key []byte, warn string, err error) {
	return access.ReadEncryptKey(path)
}

// NewEncryptKey returns a fresh key as ax keygen prints it.
func NewEncryptKey() string { return access.NewEncryptKey() }
