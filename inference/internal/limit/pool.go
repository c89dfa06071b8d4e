package limit

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// A Pool is the arena of one concurrent run of a model: the buffers of the
// values that died in earlier runs, kept by size and handed out again by
// Make, so that after the first runs a run allocates only the buffers it
// hands back to its caller. A model keeps one Pool per run in flight
// (cpu.Model's pools).
//
// The executor tells the Pool which buffers its values hold: Ref when a
// value is computed, Unref at its last reader, Sweep after each node for
// the kernel's scratch, End after the run. A buffer goes back to the free
// lists when no value refers to it; one still referred to when the run
// ends (an output, or a view of one) leaves the Pool with the caller.
// Views are found by address: a value whose data lies anywhere inside a
// buffer holds that buffer.
//
// Only element types without pointers are pooled (numbers and bools), and
// only buffers of at least MinPooled bytes.
type Pool struct {
	mu      sync.Mutex
	classes map[int64]*class // by size in bytes
	live    []*buffer        // handed out in this run, by address
	taken   []*buffer        // handed out in this run, in order
	runs    int
	// ntaken is len(taken), read without the lock by Mark and by Sweep,
	// which has nothing to do after a node that took no buffer (a view).
	ntaken atomic.Int64
}

// MinPooled is the least size in bytes a Pool hands out: every buffer that
// holds an element, so that a steady run allocates nothing, scalars and
// shape tensors included.
const MinPooled = 1

// keepRuns is how many runs a size stays in the free lists after the last
// run that asked for it: a model fed alternating batch sizes keeps both,
// one whose batch size changed for good lets the old buffers go.
const keepRuns = 4

type buffer struct {
	mem   []uint64 // 8-byte aligned, len·8 ≥ size
	addr  uintptr
	size  int64
	refs  int
	class *class // its size's
}

// A class is the buffers of one size: those free, and the last run that
// asked for the size. A buffer points to its class, so that a steady run
// looks sizes up once per buffer it takes and writes no map.
type class struct {
	free []*buffer
	used int
}

// NewPool returns an empty pool.
func NewPool() *Pool {
	return &Pool{classes: map[int64]*class{}}
}

// SetPool makes r's Make take buffers from p; it is called before the run
// starts.
func (r *Run) SetPool(p *Pool) { r.pool = p }

// Pool is the run's pool, or nil.
func (r *Run) Pool() *Pool {
	if r == nil {
		return nil
	}
	return r.pool
}

// take returns a buffer of size bytes, zeroed when zeroed is set (a new
// one always is).
func (p *Pool) take(size int64, zeroed bool) *buffer {
	p.mu.Lock()
	c := p.classes[size]
	if c == nil {
		c = new(class)
		p.classes[size] = c
	}
	c.used = p.runs
	if k := len(c.free); k > 0 {
		b := c.free[k-1]
		c.free[k-1] = nil
		c.free = c.free[:k-1]
		p.hold(b)
		p.mu.Unlock()
		if zeroed {
			clear(b.mem) // outside the lock: b is this caller's alone
		}
		return b
	}
	p.mu.Unlock()
	mem := make([]uint64, (size+7)/8) // outside the lock, as it may be large
	b := &buffer{mem: mem, addr: uintptr(unsafe.Pointer(unsafe.SliceData(mem))), size: size, class: c}
	p.mu.Lock()
	p.hold(b)
	p.mu.Unlock()
	return b
}

// hold records b as handed out in this run. p.mu is held.
func (p *Pool) hold(b *buffer) {
	i, _ := p.find(b.addr)
	p.live = slices.Insert(p.live, i, b)
	p.taken = append(p.taken, b)
	p.ntaken.Store(int64(len(p.taken)))
}

// find returns where a buffer starting at addr is, or would be, in the
// live buffers. p.mu is held.
func (p *Pool) find(addr uintptr) (int, bool) {
	return slices.BinarySearchFunc(p.live, addr, func(b *buffer, a uintptr) int { return cmp.Compare(b.addr, a) })
}

// holder returns the live buffer whose bytes contain addr, or nil.
// p.mu is held.
func (p *Pool) holder(addr uintptr) *buffer {
	i, found := p.find(addr)
	if found {
		return p.live[i]
	}
	if i == 0 {
		return nil
	}
	if b := p.live[i-1]; addr < b.addr+uintptr(b.size) {
		return b
	}
	return nil
}

// Ref records a value whose data starts at addr (0: no data); a value
// outside the pool's buffers is ignored.
func (p *Pool) Ref(addr uintptr) {
	p.mu.Lock()
	if b := p.holder(addr); b != nil && addr != 0 {
		b.refs++
	}
	p.mu.Unlock()
}

// Unref records that a value Ref recorded is dead; its buffer goes back to
// the free lists when no other value refers to it.
func (p *Pool) Unref(addr uintptr) {
	p.mu.Lock()
	if b := p.holder(addr); b != nil && addr != 0 {
		b.refs--
		if b.refs == 0 {
			p.release(b)
		}
	}
	p.mu.Unlock()
}

// release moves b from the live buffers to the free lists. p.mu is held.
func (p *Pool) release(b *buffer) {
	i, _ := p.find(b.addr)
	p.live = slices.Delete(p.live, i, i+1)
	b.class.free = append(b.class.free, b)
}

// Mark returns the number of buffers handed out so far in this run, for
// Sweep.
func (p *Pool) Mark() int { return int(p.ntaken.Load()) }

// Sweep frees the buffers handed out since mark that no value refers to:
// the scratch of the kernel that just ran.
func (p *Pool) Sweep(mark int) {
	if p.ntaken.Load() == int64(mark) {
		return // nothing handed out since mark
	}
	p.mu.Lock()
	for _, b := range p.taken[mark:] {
		if b.refs == 0 && p.holder(b.addr) == b {
			p.release(b)
		}
	}
	p.mu.Unlock()
}

// End closes a run: buffers still referred to leave the pool with the
// values that hold them, the rest are free for the next run, and sizes no
// run asked for in keepRuns runs are dropped.
func (p *Pool) End() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range p.live {
		if b.refs == 0 { // a failed run's values
			b.class.free = append(b.class.free, b)
		}
	}
	p.live = p.live[:0]
	clear(p.taken)
	p.taken = p.taken[:0]
	p.ntaken.Store(0)
	for size, c := range p.classes {
		if p.runs-c.used >= keepRuns {
			delete(p.classes, size) // its buffers, free and held, no longer come back
		}
	}
	p.runs++
}

// Bytes is the size of the buffers in the free lists.
func (p *Pool) Bytes() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n int64
	for size, c := range p.classes {
		n += size * int64(len(c.free))
	}
	return n
}

// makePooled returns n elements of T from p, zeroed when zeroed is set,
// when T has no pointers and the size is worth pooling; else ok is false.
func makePooled[T any](p *Pool, n int, zeroed bool) (s []T, ok bool) {
	var zero T
	switch any(zero).(type) {
	case float32, float64, int64, int32, int16, int8, int, uint64, uint32, uint16, uint8, bool:
	default:
		return nil, false
	}
	size := int64(n) * int64(unsafe.Sizeof(zero))
	if size < MinPooled {
		return nil, false
	}
	b := p.take(size, zeroed)
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b.mem))), n), true
}
