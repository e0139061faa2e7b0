//go:build !amd64

package wheel

// prefetchChunk is a hint to load c into the caches; on this architecture
// it does nothing.
func prefetchChunk(c *chunk) {}
