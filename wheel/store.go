package wheel

// Storage for timers, all in pointer-free arrays so that the garbage
// collector never scans per-timer memory:
//
//   - Each list of timers (a wheel slot, the overflow list, the ready list)
//     is a deque of chunks of chunkCap cells. A cell holds a timer's
//     deadline, id and index in 20 bytes. Cascading or firing a slot
//     streams through its chunks instead of chasing one pointer per timer
//     through memory. The chunks' links live apart from their cells.
//   - Per timer index, a 32-bit generation (4 bytes) and a pending bit. A
//     Handle is an index and a generation. Nothing records where a timer's
//     cell is, so moving cells (cascading, sweeping) never writes to
//     per-index memory at random addresses.
//   - Cancelling is lazy: Remove clears the pending bit and leaves the cell
//     where it is, as a tombstone. Whoever next reaches the cell (firing,
//     cascading or sweeping its list) drops it and frees its index; until
//     then the index is not reused, so the tombstone cannot be mistaken
//     for a later timer. Freed indices wait on a stack; reusing one
//     increments its generation, so a stale Handle never matches.
//
// That is 24 bytes and a bit per pending timer, plus 24 bytes per
// tombstone (which Wheel keeps below about 0.3 per pending timer, see
// Wheel.sweep), plus the partly filled chunks at the ends of each list.
// Chunks, generations, pending bits and the free stack live in fixed-size
// pages that are allocated on demand and never moved, so growing never
// copies timers.

const (
	chunkBits = 5
	chunkCap  = 1 << chunkBits // cells per chunk

	chunkPageBits = 6 // 64 chunks (40 KB, five 8 KB runtime pages) per page
	chunkPageSize = 1 << chunkPageBits
	chunkPageMask = chunkPageSize - 1

	genPageBits = 12 // 4096 generations (16 KB) per page
	genPageSize = 1 << genPageBits
	genPageMask = genPageSize - 1

	livePageBits  = 15 // pending bits of 32768 indices (4 KB) per page
	livePageWords = 1 << livePageBits / 64

	stackPageBits = 12 // 4096 free indices (16 KB) per page
	stackPageSize = 1 << stackPageBits
	stackPageMask = stackPageSize - 1

	// maxIndex bounds timer indices (pending timers plus tombstones) and
	// maxChunks chunk numbers, far beyond what memory allows.
	maxIndex  = 1 << 31
	maxChunks = 1 << 31
)

// chunk is a run of up to chunkCap timers of one list: cell k of a chunk
// is (due[k], id[k], idx[k]). The fields are in separate arrays, which
// needs no packing to stay at 20 bytes a cell and keeps the indices a
// sweep checks on two cache lines; and cells are never copied as structs:
// a 20-byte struct copy compiles to overlapping 16-byte moves, and reading
// its fields back then stalls.
type chunk struct {
	due [chunkCap]int64  // deadline, Unix nanoseconds (saturated)
	id  [chunkCap]uint64 // caller's id
	idx [chunkCap]uint32 // index of the timer: its generation and pending bit
}

// deque is a list of cells: n cells from (head, headOff) to just before
// (tail, tailOff), through chunks linked by their next. An empty deque
// holds no chunk.
type deque struct {
	head, tail       uint32
	headOff, tailOff uint32
	n                uint32
}

// The pages are slices rather than pointers to arrays: indexing a pointer
// to a large array makes the compiler check it for nil by loading its first
// word, an extra cache miss per access.
type store struct {
	chunks    [][]chunk  // pages of chunkPageSize
	nexts     [][]uint32 // per chunk, the next chunk of its list (0 = none)
	hiChunk   uint32     // first chunk never handed out; chunk 0 is unused
	freeChunk uint32     // free chunks, linked by next

	gens  [][]uint32 // pages of genPageSize
	live  [][]uint64 // pages of livePageWords; bit i: timer index i is pending
	hiIdx uint32     // first index never handed out; 0 is unused
	free  [][]uint32 // pages of stackPageSize: a stack of indices free for reuse
	nFree int
}

func (s *store) init() {
	s.hiChunk, s.hiIdx = 1, 1
	s.chunks = append(s.chunks, make([]chunk, chunkPageSize))
	s.nexts = append(s.nexts, make([]uint32, chunkPageSize))
	s.gens = append(s.gens, make([]uint32, genPageSize))
	s.live = append(s.live, make([]uint64, livePageWords))
}

func (s *store) chunk(c uint32) *chunk {
	return &s.chunks[c>>chunkPageBits][c&chunkPageMask]
}

func (s *store) next(c uint32) *uint32 {
	return &s.nexts[c>>chunkPageBits][c&chunkPageMask]
}

func (s *store) gen(i uint32) *uint32 {
	return &s.gens[i>>genPageBits][i&genPageMask]
}

// liveWord returns the word holding index i's pending bit, and the bit.
func (s *store) liveWord(i uint32) (*uint64, uint64) {
	return &s.live[i>>livePageBits][i>>6&(livePageWords-1)], 1 << (i & 63)
}

// pending reports whether index i holds a pending timer.
func (s *store) pending(i uint32) bool {
	w, b := s.liveWord(i)
	return *w&b != 0
}

// newIndex returns an unused index, marked pending, and its generation.
func (s *store) newIndex() (uint32, uint32) {
	var i uint32
	if s.nFree != 0 {
		s.nFree--
		i = s.free[s.nFree>>stackPageBits][s.nFree&stackPageMask]
		*s.gen(i)++
	} else {
		i = s.hiIdx
		if i == maxIndex {
			panic("wheel: too many timers")
		}
		if i>>genPageBits == uint32(len(s.gens)) {
			s.gens = append(s.gens, make([]uint32, genPageSize))
		}
		if i>>livePageBits == uint32(len(s.live)) {
			s.live = append(s.live, make([]uint64, livePageWords))
		}
		s.hiIdx++
	}
	w, b := s.liveWord(i)
	*w |= b
	return i, *s.gen(i)
}

// cancel clears the pending bit of index i if it is pending with
// generation gen, and reports whether it did. The index stays in use (by
// its cell, now a tombstone) until freeIndex.
func (s *store) cancel(i, gen uint32) bool {
	w, b := s.liveWord(i)
	if *s.gen(i) != gen || *w&b == 0 {
		return false
	}
	*w &^= b
	return true
}

// take clears the pending bit of index i, whose timer is firing, and frees
// the index. It only touches the bitmap and the free stack, not the
// generation, so that firing reads nothing at a random address but a bit.
func (s *store) take(i uint32) {
	w, b := s.liveWord(i)
	*w &^= b
	s.freeIndex(i)
}

// freeIndex makes index i, no longer pending and whose cell is gone,
// available to newIndex.
func (s *store) freeIndex(i uint32) {
	if s.nFree>>stackPageBits == len(s.free) {
		s.free = append(s.free, make([]uint32, stackPageSize))
	}
	s.free[s.nFree>>stackPageBits][s.nFree&stackPageMask] = i
	s.nFree++
}

func (s *store) newChunk() uint32 {
	c := s.freeChunk
	if c != 0 {
		s.freeChunk = *s.next(c)
	} else {
		c = s.hiChunk
		if c == maxChunks {
			panic("wheel: too many timers")
		}
		if c>>chunkPageBits == uint32(len(s.chunks)) {
			s.chunks = append(s.chunks, make([]chunk, chunkPageSize))
			s.nexts = append(s.nexts, make([]uint32, chunkPageSize))
		}
		s.hiChunk++
	}
	*s.next(c) = 0
	return c
}

func (s *store) releaseChunk(c uint32) {
	*s.next(c) = s.freeChunk
	s.freeChunk = c
}

// push appends a cell to list d.
func (s *store) push(d *deque, due int64, id uint64, idx uint32) {
	if d.n == 0 || d.tailOff == chunkCap {
		s.addTail(d)
	}
	ch, o := s.chunk(d.tail), d.tailOff&(chunkCap-1)
	ch.due[o], ch.id[o], ch.idx[o] = due, id, idx
	d.tailOff++
	d.n++
}

// addTail gives list d an empty tail chunk: its first one, or the one after
// its full tail chunk.
func (s *store) addTail(d *deque) {
	c := s.newChunk()
	if d.n == 0 {
		d.head, d.headOff = c, 0
	} else {
		*s.next(d.tail) = c
	}
	d.tail, d.tailOff = c, 0
}

// front returns the chunk and offset of the first cell of the non-empty
// list d.
func (s *store) front(d *deque) (*chunk, uint32) {
	return s.chunk(d.head), d.headOff & (chunkCap - 1)
}

// dropFront removes the first cell of the non-empty list d.
func (s *store) dropFront(d *deque) {
	d.n--
	d.headOff++
	if d.n == 0 {
		s.releaseChunk(d.head)
		*d = deque{}
	} else if d.headOff == chunkCap {
		next := *s.next(d.head)
		s.releaseChunk(d.head)
		d.head, d.headOff = next, 0
	}
}
