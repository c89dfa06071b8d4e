package cpu

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/beamml/beamml/inference"
)

// Parallel loops of the kernels: work split into contiguous chunks when it
// is large enough to pay for it, the chunks run by the calling goroutine
// and by the pool's workers.
//
// The pool holds GOMAXPROCS−1 goroutines, started on first use, so that a
// loop never starts more goroutines than there are processors whatever
// runs it at once: a chunk goes to a worker only if one is idle, and the
// caller runs the rest itself. A worker that finishes a chunk stays awake
// for workerSpin, yielding its processor to any other goroutine that wants
// it, before it parks: the next operator's loop, microseconds later, then
// finds it running. Waking a parked goroutine takes tens of microseconds
// when the thread under it sleeps, as long as many operators run at batch 1.

// workerSpin is how long an idle worker, or a caller waiting for workers,
// polls before it blocks.
const workerSpin = 100 * time.Microsecond

// parallelFor calls fn on contiguous chunks of [0, n) that together cover
// it, on up to GOMAXPROCS goroutines when the work, n·cost (flops or
// element visits), reaches nnSgemmSerialFlops, and on the calling goroutine
// otherwise.
func parallelFor(n, cost int, fn func(lo, hi int)) {
	parallelSplit(n, parallelParts(n, cost), fn)
}

// parallelParts is how many chunks parallelFor splits n items of cost
// work each into.
func parallelParts(n, cost int) int {
	if n > 1 && n*cost >= nnSgemmSerialFlops {
		return min(n, runtime.GOMAXPROCS(0), max(1, n*cost/nnSgemmTaskFlops))
	}
	return 1
}

// parallelSplit calls fn on parts contiguous chunks of [0, n), chunk i
// being [n·i/parts, n·(i+1)/parts), the first on the calling goroutine and
// the others on idle pool workers or, when none is idle, on the calling
// goroutine too. A panic in any chunk is raised again on the caller once
// every chunk has ended.
func parallelSplit(n, parts int, fn func(lo, hi int)) {
	if parts <= 1 || n <= 1 {
		fn(0, n)
		return
	}
	b := batches.get()
	defer batches.put(b)
	b.pending.Store(1) // the caller's hold, dropped in wait
	// Hand chunks 1… to idle workers while there are some, then run the
	// first chunk and those left here.
	idle := pool.workers(runtime.GOMAXPROCS(0) - 1)
	next := 1
	for ; next < parts && pool.give(idle, task{fn: fn, lo: n * next / parts, hi: n * (next + 1) / parts, b: b}); next++ {
	}
	b.run(fn, 0, n/parts)
	for i := next; i < parts; i++ {
		b.run(fn, n*i/parts, n*(i+1)/parts)
	}
	b.wait()
}

// eachUnit runs body over units independent products of flops work each
// (images × groups of a convolution, matrices of a batched MatMul). Units
// go to separate goroutines, each running its SGEMMs with threads = 1, when
// they divide evenly among the cores or are too small to split further;
// otherwise one goroutine runs them in turn and each SGEMM gets every core.
func eachUnit(units, flops int, body func(lo, hi, threads int)) {
	procs := runtime.GOMAXPROCS(0)
	if units > 1 && (flops < nnSgemmSerialFlops || units%procs == 0 || units >= 4*procs) {
		j := unitJobs.get()
		j.body = body
		parallelFor(units, flops, j.loop)
		j.body = nil
		unitJobs.put(j)
		return
	}
	body(0, units, procs)
}

// unitJob is eachUnit's loop over units on one thread each, pooled with
// its loop bound once: a closure over body would be allocated on every
// call. (A kernel that wants no allocation at all also keeps its body in
// its plan.)
type unitJob struct {
	body func(lo, hi, threads int)
	loop func(lo, hi int) // run, bound once
}

func (j *unitJob) run(lo, hi int) { j.body(lo, hi, 1) }

var unitJobs = freeList[unitJob]{make: func() *unitJob {
	j := new(unitJob)
	j.loop = j.run
	return j
}}

// A batch is the chunks of one parallelSplit. pending counts the chunks
// given to workers and not yet ended, plus one held by the caller until
// it waits; whoever brings it to 0 is the last, and a worker that is the
// last sends done its one token. panicked keeps the first panic of any
// chunk. Batches are reused (batches), so that a loop allocates none.
type batch struct {
	pending  atomic.Int32
	done     chan struct{}
	panicked atomic.Pointer[inference.PanicError]
}

var batches = freeList[batch]{make: func() *batch { return &batch{done: make(chan struct{}, 1)} }}

// run calls fn(lo, hi), recovering a panic into b.
func (b *batch) run(fn func(lo, hi int), lo, hi int) {
	defer func() {
		if v := recover(); v != nil {
			b.panicked.CompareAndSwap(nil, inference.Recovered("a kernel's parallel loop", v))
		}
	}()
	fn(lo, hi)
}

// ended records the end of a chunk a worker ran.
func (b *batch) ended() {
	if b.pending.Add(-1) == 0 {
		b.done <- struct{}{}
	}
}

// wait drops the caller's hold and waits for the chunks given to workers,
// polling for workerSpin before it blocks, then panics with the first
// panic of any chunk. b is then ready for reuse.
func (b *batch) wait() {
	if b.pending.Add(-1) != 0 {
		spin(func() bool { return b.pending.Load() == 0 })
		<-b.done
	}
	if pe := b.panicked.Swap(nil); pe != nil {
		panic(pe)
	}
}

// A task is a chunk handed to a worker.
type task struct {
	fn     func(lo, hi int)
	lo, hi int
	b      *batch
}

// workerPool is the kernel workers.
type workerPool struct {
	mu   sync.Mutex
	all  []*worker
	list atomic.Pointer[[]*worker] // all, for lock-free reads
}

var pool workerPool

// worker is one pool goroutine. busy is set by whoever claims it; has
// says its task is ready; wake carries a token when it may be parked.
type worker struct {
	busy atomic.Bool
	has  atomic.Bool
	next task
	wake chan struct{}
}

// workers returns the first n of the pool's workers, starting those
// missing.
func (p *workerPool) workers(n int) []*worker {
	if n <= 0 {
		return nil
	}
	if list := p.list.Load(); list != nil && len(*list) >= n {
		return (*list)[:n]
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.all) < n {
		w := &worker{wake: make(chan struct{}, 1)}
		p.all = append(p.all, w)
		go w.loop()
	}
	list := append([]*worker(nil), p.all...)
	p.list.Store(&list)
	return list[:n]
}

// give hands t to the first idle worker of list and reports whether one
// took it.
func (p *workerPool) give(list []*worker, t task) bool {
	for _, w := range list {
		if w.busy.CompareAndSwap(false, true) {
			t.b.pending.Add(1)
			w.next = t
			w.has.Store(true)
			select {
			case w.wake <- struct{}{}:
			default: // a token is there already
			}
			return true
		}
	}
	return false
}

// loop runs the worker's tasks as they come.
func (w *worker) loop() {
	for {
		if !w.await() {
			<-w.wake
			continue
		}
		t := w.next
		w.next = task{}
		w.has.Store(false)
		t.b.run(t.fn, t.lo, t.hi)
		w.busy.Store(false)
		t.b.ended()
	}
}

// await polls for a task for workerSpin, yielding the processor now and
// then (spin), and reports whether one came.
func (w *worker) await() bool {
	return spin(w.has.Load)
}

// spin polls done for workerSpin, and reports whether done came true. It
// yields the processor (and reads the clock) every spinPolls polls, not
// after each: a yield goes through the scheduler's global queue, under its
// lock, which the caller and the workers would otherwise take in turn
// while they wait for each other, and the chunk that ends the wait would
// be seen a yield late.
func spin(done func() bool) bool {
	start := time.Now()
	for i := 1; !done(); i++ {
		if i%spinPolls != 0 {
			continue
		}
		if time.Since(start) >= workerSpin {
			return done()
		}
		runtime.Gosched()
	}
	return true
}

// spinPolls is how many polls spin makes between yields: a few hundred
// nanoseconds.
const spinPolls = 64
