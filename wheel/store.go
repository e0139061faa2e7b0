package wheel

// Storage for timers, all in pointer-free arrays so that the garbage
// collector never scans per-timer memory:
//
//   - Each list of timers (a wheel slot, the overflow list, the ready list)
//     is a deque of chunks of chunkCap cells. A cell holds a timer's
//     deadline, id and handle index in 20 bytes. Cascading or firing a slot
//     streams through its chunks instead of chasing one pointer per timer
//     through memory. The chunks' links live apart from their cells, in a
//     small array that stays in cache.
//   - A handle record per timer (8 bytes) holds the timer's cell position
//     and a generation. Remove finds the cell through it in O(1) and fills
//     the hole with the list's last cell; a moved cell updates its handle
//     record. The generation makes stale handles harmless.
//
// That is 28 bytes per timer, plus the partly filled chunks at the ends of
// each list. Chunks and handle records live in fixed-size pages that are
// allocated on demand and never moved, so growing never copies timers.

const (
	chunkBits = 5
	chunkCap  = 1 << chunkBits // cells per chunk
	chunkMask = chunkCap - 1

	chunkPageBits = 6 // 64 chunks (40 KB, five 8 KB runtime pages) per page
	chunkPageSize = 1 << chunkPageBits
	chunkPageMask = chunkPageSize - 1

	handlePageBits = 12 // 4096 handle records (32 KB) per page
	handlePageSize = 1 << handlePageBits
	handlePageMask = handlePageSize - 1

	// freeBit marks a handle record on the free list; its pos then holds
	// the next free index.
	freeBit = 1 << 31
	// batchBit marks the handle record of a timer that Advance has taken
	// out of its list to fire; its pos then holds the index in the batch.
	batchBit = 1 << 30
	// maxChunks keeps cell positions (chunk<<chunkBits | offset) below
	// batchBit.
	maxChunks = batchBit >> chunkBits
)

// cell is one pending timer, packed into 4-byte words so that it takes 20
// bytes rather than 24.
type cell struct {
	dueLo, dueHi uint32 // deadline, Unix nanoseconds (saturated)
	idLo, idHi   uint32 // caller's id
	hidx         uint32 // handle record of the timer
}

func makeCell(due int64, id uint64, hidx uint32) cell {
	return cell{uint32(due), uint32(uint64(due) >> 32), uint32(id), uint32(id >> 32), hidx}
}

func (c *cell) due() int64 { return int64(uint64(c.dueHi)<<32 | uint64(c.dueLo)) }
func (c *cell) id() uint64 { return uint64(c.idHi)<<32 | uint64(c.idLo) }

// chunk is a run of cells of one list.
type chunk [chunkCap]cell

// chunkMeta links a chunk to its neighbours in its list.
type chunkMeta struct {
	next, prev uint32 // 0 = none
}

// deque is a list of cells: n cells from (head, headOff) to just before
// (tail, tailOff), through chunks linked by next. An empty deque holds no
// chunk.
type deque struct {
	head, tail       uint32
	headOff, tailOff uint32
	n                uint32
}

// handleRec locates a timer's cell. While the timer is pending, pos is its
// cell position (or batchBit|index while it waits in Advance's batch); once
// it fired or was removed, pos is freeBit|next free.
type handleRec struct {
	pos uint32
	gen uint32
}

type store struct {
	chunks    []*[chunkPageSize]chunk
	metas     []*[chunkPageSize]chunkMeta
	chunkList []uint16 // per chunk, its list: 2 bytes per 32 timers, so it stays in cache for Remove
	hiChunk   uint32   // first chunk never handed out; chunk 0 is unused
	freeChunk uint32   // free chunks, linked by next

	handles    []*[handlePageSize]handleRec
	hiHandle   uint32 // first handle index never handed out; 0 is unused
	freeHandle uint32 // free handle records; 0 = none
}

func (s *store) init() {
	s.hiChunk, s.hiHandle = 1, 1
	s.chunkList = make([]uint16, 1, chunkPageSize)
	s.chunks = append(s.chunks, new([chunkPageSize]chunk))
	s.metas = append(s.metas, new([chunkPageSize]chunkMeta))
	s.handles = append(s.handles, new([handlePageSize]handleRec))
}

func (s *store) chunk(c uint32) *chunk {
	return &s.chunks[c>>chunkPageBits][c&chunkPageMask]
}

func (s *store) meta(c uint32) *chunkMeta {
	return &s.metas[c>>chunkPageBits][c&chunkPageMask]
}

// cell returns the cell at position pos.
func (s *store) cell(pos uint32) *cell {
	return &s.chunks[pos>>(chunkBits+chunkPageBits)][pos>>chunkBits&chunkPageMask][pos&chunkMask]
}

func (s *store) handle(i uint32) *handleRec {
	return &s.handles[i>>handlePageBits][i&handlePageMask]
}

// newHandle returns an unused handle index and its generation.
func (s *store) newHandle() (uint32, uint32) {
	if i := s.freeHandle; i != 0 {
		h := s.handle(i)
		s.freeHandle = h.pos &^ freeBit
		h.gen++
		return i, h.gen
	}
	i := s.hiHandle
	if i == freeBit {
		panic("wheel: too many timers")
	}
	if i>>handlePageBits == uint32(len(s.handles)) {
		s.handles = append(s.handles, new([handlePageSize]handleRec))
	}
	s.hiHandle++
	return i, s.handle(i).gen
}

// releaseHandle invalidates handle index i; it only writes, so that firing a
// timer does not have to read its handle record.
func (s *store) releaseHandle(i uint32) {
	s.handle(i).pos = freeBit | s.freeHandle
	s.freeHandle = i
}

func (s *store) newChunk(list uint32) uint32 {
	c := s.freeChunk
	if c != 0 {
		s.freeChunk = s.meta(c).next
	} else {
		c = s.hiChunk
		if c == maxChunks {
			panic("wheel: too many timers")
		}
		if c>>chunkPageBits == uint32(len(s.chunks)) {
			s.chunks = append(s.chunks, new([chunkPageSize]chunk))
			s.metas = append(s.metas, new([chunkPageSize]chunkMeta))
		}
		s.hiChunk++
		s.chunkList = append(s.chunkList, 0)
	}
	*s.meta(c) = chunkMeta{}
	s.chunkList[c] = uint16(list)
	return c
}

func (s *store) releaseChunk(c uint32) {
	s.meta(c).next = s.freeChunk
	s.freeChunk = c
}

// push appends a cell to list d (whose index is list) and points its handle
// record at it.
func (s *store) push(d *deque, list uint32, due int64, id uint64, hidx uint32) {
	if d.n == 0 {
		c := s.newChunk(list)
		d.head, d.tail, d.headOff, d.tailOff = c, c, 0, 0
	} else if d.tailOff == chunkCap {
		c := s.newChunk(list)
		s.meta(d.tail).next = c
		s.meta(c).prev = d.tail
		d.tail, d.tailOff = c, 0
	}
	s.chunk(d.tail)[d.tailOff] = makeCell(due, id, hidx)
	s.handle(hidx).pos = d.tail<<chunkBits | d.tailOff
	d.tailOff++
	d.n++
}

// popFront removes and returns the first cell of the non-empty list d.
func (s *store) popFront(d *deque) (due int64, id uint64, hidx uint32) {
	c := &s.chunk(d.head)[d.headOff]
	due, id, hidx = c.due(), c.id(), c.hidx
	d.n--
	d.headOff++
	if d.n == 0 {
		s.releaseChunk(d.head)
		*d = deque{}
	} else if d.headOff == chunkCap {
		next := s.meta(d.head).next
		s.releaseChunk(d.head)
		s.meta(next).prev = 0
		d.head, d.headOff = next, 0
	}
	return due, id, hidx
}

// removeAt removes the cell at pos from list d, moving the last cell into
// the hole.
func (s *store) removeAt(d *deque, pos uint32) {
	last := d.tailOff - 1
	if lp := d.tail<<chunkBits | last; pos != lp {
		t := &s.chunk(d.tail)[last]
		*s.cell(pos) = *t
		s.handle(t.hidx).pos = pos
	}
	d.n--
	d.tailOff = last
	if d.n == 0 {
		s.releaseChunk(d.tail)
		*d = deque{}
	} else if last == 0 {
		prev := s.meta(d.tail).prev
		s.releaseChunk(d.tail)
		s.meta(prev).next = 0
		d.tail, d.tailOff = prev, chunkCap
	}
}

// moveAll moves every cell of list from to the empty list to (whose index
// is list). It relabels the chunks, so it costs one step per chunk.
func (s *store) moveAll(from, to *deque, list uint32) {
	*to, *from = *from, deque{}
	if to.n == 0 {
		return
	}
	for c := to.head; c != 0; c = s.meta(c).next {
		s.chunkList[c] = uint16(list)
	}
}
