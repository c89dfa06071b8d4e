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
//
// A run that repeats the one before it, buffer for buffer (the same sizes
// taken and freed in the same order), is planned: its buffers are laid out
// in one arena, each at an offset that no buffer live at the same time
// overlaps (the largest placed first, each at the lowest offset free for
// its lifetime), and the runs that follow take them from there. The arena
// is about as large as the most bytes live at once, where the free lists
// keep a buffer of every size the run asked for: the buffers a kernel
// writes were, most of them, written a few nodes before, and are still in
// the cache. A run whose workers take a node's scratch in another order
// than the planned run did takes each from the plan's place for a take
// nearby of the same size. A run that leaves the plan (another size, or a
// buffer whose place is still held by a live one) takes the rest of its
// buffers from the free lists; plans are kept for the few signatures seen
// last.
type Pool struct {
	mu      sync.Mutex
	classes map[int64]*class // by size in bytes
	live    []*buffer        // handed out in this run, by address
	taken   []*buffer        // handed out in this run, in order
	runs    int
	// ntaken is len(taken), read without the lock by Mark and by Sweep,
	// which has nothing to do after a node that took no buffer (a view).
	ntaken atomic.Int64

	// The run's lifetimes, one per buffer taken (in order), and the last
	// run's: a run whose lifetimes repeat the last run's is planned.
	clock     int32
	rec, last []lifetime
	plans     []*plan
	cur       *plan // the plan this run follows, nil when none fits
	lost      bool  // the run left its plan, and no other fits
	misses    int   // takes in this run the plans did not serve
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
	class *class // its size's; nil for a buffer in a plan's arena
	take  int    // its index among the run's takes (Pool.rec)
}

// A lifetime is one buffer a run took: its size and the clock (takes and
// frees counted in the run's order) when it was taken and freed; to is
// escaped when it left the pool with a value at the end of the run.
type lifetime struct {
	size     int64
	from, to int32
}

const escaped = -1

// A plan is a run's buffers laid out in one arena: bufs[k] is the k-th
// buffer the run takes, or has size 0 where that buffer is not planned
// (it escaped). rec is the run it was made from.
type plan struct {
	rec   []lifetime
	arena []uint64
	bufs  []buffer
	used  int // the last run that followed it
}

// maxPlans is how many plans a pool keeps: a model fed a few batch sizes
// in turn keeps one for each.
const maxPlans = 4

// planAlign is the alignment of a planned buffer in bytes: a cache line.
const planAlign = 64

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
	k := len(p.rec)
	p.rec = append(p.rec, lifetime{size: size, from: p.clock, to: escaped})
	p.clock++
	if b := p.planned(k, size); b != nil {
		b.take, b.refs = k, 0
		p.hold(b)
		p.mu.Unlock()
		if zeroed {
			clear(b.mem)
		}
		return b
	}
	if !p.unplanned(k, size) {
		p.misses++
	}
	c := p.classes[size]
	if c == nil {
		c = new(class)
		p.classes[size] = c
	}
	c.used = p.runs
	if n := len(c.free); n > 0 {
		b := c.free[n-1]
		c.free[n-1] = nil
		c.free = c.free[:n-1]
		b.take = len(p.rec) - 1
		p.hold(b)
		p.mu.Unlock()
		if zeroed {
			clear(b.mem) // outside the lock: b is this caller's alone
		}
		return b
	}
	p.mu.Unlock()
	mem := make([]uint64, (size+7)/8) // outside the lock, as it may be large
	b := &buffer{mem: mem, addr: uintptr(unsafe.Pointer(unsafe.SliceData(mem))), size: size, class: c, take: k}
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

// planned returns the k-th buffer of the run, size bytes, from the plan
// the run follows, or nil: when no plan has taken the run's sizes so far,
// or the plan's place for it is still held. p.mu is held.
func (p *Pool) planned(k int, size int64) *buffer {
	if p.cur != nil && k < len(p.cur.rec) && p.cur.rec[k].size != size {
		// Workers that take their scratch in another order than the
		// planned run did: the plan has the size a few takes away.
		if b := p.nearby(k, size); b != nil {
			return b
		}
	}
	if p.cur == nil || k >= len(p.cur.rec) || p.cur.rec[k].size != size {
		if p.lost {
			return nil
		}
		p.cur, p.lost = nil, true // one search a run: a run that leaves its plan stays off
		for _, pl := range p.plans {
			if k < len(pl.rec) && sameSizes(pl.rec[:k+1], p.rec) {
				p.cur = pl
				break
			}
		}
		if p.cur == nil {
			return nil
		}
		p.lost = false
	}
	if b := &p.cur.bufs[k]; b.size != 0 && p.vacant(b) {
		return b
	}
	return nil
}

// unplanned reports whether the run's k-th take, of size bytes, is one
// the plan it follows leaves to the free lists (a buffer that escaped the
// planned run: an output). p.mu is held.
func (p *Pool) unplanned(k int, size int64) bool {
	return p.cur != nil && k < len(p.cur.rec) && p.cur.rec[k].size == size && p.cur.bufs[k].size == 0
}

// reorderWindow is how many takes before and after its own nearby looks
// for a buffer of the plan: as many as the scratch buffers of the
// workers of one node.
const reorderWindow = 16

// nearby returns a buffer of size bytes that the plan the run follows
// has for a take at most reorderWindow from the k-th, nearest first,
// whose place no live buffer holds, or nil. p.mu is held.
func (p *Pool) nearby(k int, size int64) *buffer {
	bufs := p.cur.bufs
	for d := 1; d <= reorderWindow; d++ {
		for _, j := range [2]int{k + d, k - d} {
			if j < 0 || j >= len(bufs) {
				continue
			}
			if b := &bufs[j]; b.size == size && p.vacant(b) {
				return b
			}
		}
	}
	return nil
}

// vacant reports whether no live buffer overlaps planned buffer b: always
// so when the run follows its plan; a run that leaves it, or takes its
// buffers in another order, may still hold the place. p.mu is held.
func (p *Pool) vacant(b *buffer) bool {
	i, _ := p.find(b.addr)
	if i < len(p.live) && p.live[i].addr < b.addr+uintptr(b.size) {
		return false
	}
	return i == 0 || p.live[i-1].addr+uintptr(p.live[i-1].size) <= b.addr
}

// sameSizes reports whether two runs' takes have the same sizes.
func sameSizes(a, b []lifetime) bool {
	return slices.EqualFunc(a, b, func(x, y lifetime) bool { return x.size == y.size })
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
	p.rec[b.take].to = p.clock
	p.clock++
	if b.class != nil {
		b.class.free = append(b.class.free, b)
	}
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
		switch {
		case b.refs == 0: // a failed run's values
			p.rec[b.take].to = p.clock
			if b.class != nil {
				b.class.free = append(b.class.free, b)
			}
		case b.class == nil:
			// A planned buffer leaves with a value: its arena is the
			// value's now.
			p.plans = slices.DeleteFunc(p.plans, func(pl *plan) bool { return ownsBuffer(pl, b) })
		}
	}
	p.live = p.live[:0]
	p.replan()
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

// replan ends the run's record: the plan it followed throughout is kept,
// a run that repeats the last one without a plan gets one, and plans no
// run followed in keepRuns runs are dropped. p.mu is held.
func (p *Pool) replan() {
	// A run its plan served throughout followed it, though its lifetimes
	// may differ where kernels take buffers from several goroutines.
	followed := p.cur
	if p.misses > 0 || followed == nil || len(followed.rec) != len(p.rec) {
		followed = nil
		for _, pl := range p.plans {
			if slices.Equal(pl.rec, p.rec) {
				followed = pl
				break
			}
		}
	}
	switch {
	case followed != nil:
		followed.used = p.runs
	case len(p.rec) > 0 && slices.Equal(p.rec, p.last):
		if len(p.plans) == maxPlans {
			p.plans = slices.Delete(p.plans, 0, 1) // the oldest
		}
		pl := newPlan(p.rec)
		pl.used = p.runs
		p.plans = append(p.plans, pl)
		// The plan holds every buffer of the run that comes back; what
		// the free lists hold would serve only the outputs, which leave
		// each run, a few runs more.
		for _, c := range p.classes {
			clear(c.free)
			c.free = c.free[:0]
		}
	}
	p.plans = slices.DeleteFunc(p.plans, func(pl *plan) bool { return p.runs-pl.used >= keepRuns })
	p.last, p.rec = p.rec, p.last[:0]
	p.clock, p.cur, p.lost, p.misses = 0, nil, false, 0
}

// ownsBuffer reports whether b lies in pl's arena (at any take's place:
// a run whose workers take buffers in another order than the planned run
// gets some at other takes' places).
func ownsBuffer(pl *plan, b *buffer) bool {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(pl.arena)))
	return b.addr >= base && b.addr < base+uintptr(len(pl.arena))*8
}

// newPlan lays out the buffers of the run rec in one arena: largest first,
// each at the lowest offset (in whole cache lines) that no buffer placed
// before it and live at the same time overlaps. Buffers that escaped are
// not planned.
func newPlan(rec []lifetime) *plan {
	order := make([]int, 0, len(rec))
	for k, l := range rec {
		if l.to != escaped {
			order = append(order, k)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(rec[b].size, rec[a].size) })
	off := make([]int64, len(rec))
	var placed []int // by offset
	var end int64
	for _, k := range order {
		l := rec[k]
		size := (l.size + planAlign - 1) / planAlign * planAlign
		at := int64(0)
		for _, j := range placed {
			o := rec[j]
			if o.to <= l.from || l.to <= o.from {
				continue // not live at the same time
			}
			if off[j] >= at+size {
				break // the gap before j is large enough
			}
			at = max(at, off[j]+(o.size+planAlign-1)/planAlign*planAlign)
		}
		off[k] = at
		i, _ := slices.BinarySearchFunc(placed, at, func(j int, a int64) int { return cmp.Compare(off[j], a) })
		placed = slices.Insert(placed, i, k)
		end = max(end, at+size)
	}
	pl := &plan{rec: slices.Clone(rec), bufs: make([]buffer, len(rec))}
	arena := make([]uint64, (end+planAlign)/8)
	base := 0 // the first word at a cache line
	for uintptr(unsafe.Pointer(&arena[base]))%planAlign != 0 {
		base++
	}
	pl.arena = arena
	for _, k := range order {
		w := base + int(off[k]/8)
		mem := arena[w : w+int((rec[k].size+7)/8)]
		pl.bufs[k] = buffer{mem: mem, addr: uintptr(unsafe.Pointer(&mem[0])), size: rec[k].size}
	}
	return pl
}

// Bytes is the size of the buffers in the free lists and the plans'
// arenas.
func (p *Pool) Bytes() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n int64
	for size, c := range p.classes {
		n += size * int64(len(c.free))
	}
	for _, pl := range p.plans {
		n += int64(len(pl.arena)) * 8
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
