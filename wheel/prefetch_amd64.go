package wheel

import "unsafe"

// The chunk size the assembly assumes: ten 64-byte lines.
const _ = -uint(unsafe.Sizeof(chunk{}) ^ 640)

// prefetchChunk asks the CPU to start loading all of c into its caches,
// without waiting for it. Draining or sweeping a list calls it for the next
// chunk while it works through the current one.
//
//go:noescape
func prefetchChunk(c *chunk)
