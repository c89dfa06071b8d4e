package limit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// poolRun is one run's buffers as a test drives them: taken with Make,
// each filled with a mark of its own, and freed (Unref) or kept to the
// end, where the marks are checked: a buffer another one overlapped while
// both were live would show the other's mark.
type poolRun struct {
	t    *testing.T
	p    *Pool
	r    *Run
	live map[int][]uint32 // by take
	n    int              // takes so far
}

func startRun(t *testing.T, p *Pool) *poolRun {
	r := New(context.Background(), 0)
	r.SetPool(p)
	return &poolRun{t: t, p: p, r: r, live: map[int][]uint32{}}
}

// take makes a buffer of n uint32s, checks it against every live one, and
// fills it with its take's mark.
func (pr *poolRun) take(n int) int {
	pr.t.Helper()
	b, err := Make[uint32](pr.r, n)
	if err != nil {
		pr.t.Fatal(err)
	}
	for i, v := range b {
		if v != 0 {
			pr.t.Fatalf("take %d: element %d is %d, not zeroed", pr.n, i, v)
		}
	}
	lo, hi := addr(b), addr(b)+uintptr(4*n)
	for k, o := range pr.live {
		if olo, ohi := addr(o), addr(o)+uintptr(4*len(o)); lo < ohi && olo < hi {
			pr.t.Fatalf("take %d (%d bytes at %#x) overlaps live take %d (%d bytes at %#x)", pr.n, 4*n, lo, k, 4*len(o), olo)
		}
	}
	k := pr.n
	pr.n++
	for i := range b {
		b[i] = uint32(k + 1)
	}
	pr.p.Ref(addr(b))
	pr.live[k] = b
	return k
}

// free checks take k's mark and lets its buffer go.
func (pr *poolRun) free(k int) {
	pr.t.Helper()
	b := pr.live[k]
	for i, v := range b {
		if v != uint32(k+1) {
			pr.t.Fatalf("take %d: element %d is %d, overwritten while live", k, i, v)
		}
	}
	delete(pr.live, k)
	pr.p.Unref(addr(b))
}

// end frees what is left, but the takes in keep, which leave the pool with
// the caller, as outputs do; it returns them.
func (pr *poolRun) end(keep ...int) map[int][]uint32 {
	pr.t.Helper()
	out := map[int][]uint32{}
	for _, k := range keep {
		out[k] = pr.live[k]
		delete(pr.live, k)
	}
	for k := range pr.live {
		pr.free(k)
	}
	pr.p.End()
	return out
}

// chain runs a chain of n nodes, each taking a buffer of sizes[i] uint32s
// and freeing its input once it has run, the last one an output: the form
// of a CNN's run. It returns the buffers' addresses and the output.
func chain(t *testing.T, p *Pool, sizes []int) ([]uintptr, []uint32) {
	pr := startRun(t, p)
	addrs := make([]uintptr, len(sizes))
	prev := -1
	for i, n := range sizes {
		k := pr.take(n)
		addrs[i] = addr(pr.live[k])
		if prev >= 0 {
			pr.free(prev)
		}
		prev = k
	}
	out := pr.end(prev)
	return addrs, out[prev]
}

// A run that repeats the one before is laid out in one arena no larger
// than the most bytes live at once (to a cache line a buffer), its
// buffers reused as their lifetimes allow, and the runs after it take
// nothing from the heap but their output.
func TestPoolPlan(t *testing.T) {
	p := NewPool()
	sizes := []int{4096, 1024, 4096, 2048, 512, 16} // uint32s
	for range 2 {
		chain(t, p, sizes)
	}
	if len(p.plans) != 1 {
		t.Fatalf("%d plans after two runs alike, want 1", len(p.plans))
	}
	pl := p.plans[0]
	addrs, _ := chain(t, p, sizes)
	// Two buffers live at once at most: 4096 + 2048 uint32s.
	if got, most := int64(len(pl.arena))*8, int64(4*(4096+2048)+planAlign); got > most+planAlign {
		t.Errorf("arena of %d bytes for at most %d live", got, most)
	}
	base, end := addr(pl.arena), addr(pl.arena)+uintptr(8*len(pl.arena))
	for i, a := range addrs[:len(addrs)-1] {
		if a < base || a >= end {
			t.Errorf("buffer %d (%d uint32s) is not in the plan's arena", i, sizes[i])
		}
		if a%planAlign != 0 {
			t.Errorf("buffer %d at %#x is not at a cache line", i, a)
		}
	}
	if a := addrs[len(addrs)-1]; a >= base && a < end {
		t.Error("the output was handed out from the arena, which the next run reuses")
	}
	// Buffers 0 and 2 are never live together: one place serves both.
	if addrs[0] != addrs[2] {
		t.Errorf("buffers 0 and 2 at %#x and %#x: the second did not reuse the first's place", addrs[0], addrs[2])
	}
	r := New(context.Background(), 0)
	r.SetPool(p)
	lean := func() { // chain without the checks
		var prev []uint32
		for _, n := range sizes {
			b, _ := Make[uint32](r, n)
			p.Ref(addr(b))
			if prev != nil {
				p.Unref(addr(prev))
			}
			prev = b
		}
		p.End()
	}
	// The output: its buffer and the pool's record of it.
	if allocs := testing.AllocsPerRun(20, lean); allocs != 2 {
		t.Errorf("%v allocations a planned run, want the output's 2", allocs)
	}
}

// The outputs of one run stay the caller's while later runs use the
// arena, and a planned buffer that leaves with a value (a run that keeps
// what the plan freed) takes its arena out of the pool.
func TestPoolPlanEscape(t *testing.T) {
	p := NewPool()
	sizes := []int{300, 300, 300, 300}
	var outs [][]uint32
	for range 4 {
		_, out := chain(t, p, sizes)
		outs = append(outs, out)
	}
	for i, o := range outs {
		for j, v := range o {
			if v != uint32(len(sizes)) {
				t.Fatalf("output of run %d: element %d is %d after later runs", i, j, v)
			}
		}
	}
	// A run that keeps buffer 1, which the plan frees.
	pr := startRun(t, p)
	a := pr.take(300)
	b := pr.take(300)
	pr.free(a)
	kept := pr.end(b)[b]
	if len(p.plans) != 0 {
		t.Fatalf("%d plans after a planned buffer left the pool, want 0", len(p.plans))
	}
	for range 3 {
		chain(t, p, sizes)
	}
	for j, v := range kept {
		if v != uint32(b+1) {
			t.Fatalf("a buffer that left the pool was written by a later run: element %d is %d", j, v)
		}
	}
}

// Runs that follow no plan, or leave theirs part way (another size, a
// buffer kept longer than the plan has it), never get a buffer a live one
// overlaps; a model fed two shapes in turn keeps a plan for each.
func TestPoolPlanDeviations(t *testing.T) {
	p := NewPool()
	a, b := []int{1000, 2000, 1000, 3000}, []int{500, 4000, 500, 100}
	for range 2 {
		chain(t, p, a)
	}
	for range 2 {
		chain(t, p, b)
	}
	if len(p.plans) != 2 {
		t.Fatalf("%d plans after two shapes twice each, want 2", len(p.plans))
	}
	for range 3 {
		chain(t, p, a)
		chain(t, p, b)
	}
	if len(p.plans) != 2 {
		t.Fatalf("%d plans while two shapes alternate, want 2", len(p.plans))
	}
	// Same sizes as a, but buffer 0 lives to the end: the plan puts
	// buffer 2 where buffer 0 is; the pool must not hand it out there.
	pr := startRun(t, p)
	k0 := pr.take(1000)
	k1 := pr.take(2000)
	k2 := pr.take(1000)
	pr.free(k1)
	k3 := pr.take(3000)
	pr.free(k2)
	pr.end(k3)
	_ = k0
	// Another size part way.
	pr = startRun(t, p)
	k0 = pr.take(1000)
	k1 = pr.take(2000)
	pr.free(k0)
	k2 = pr.take(999)
	pr.free(k1)
	pr.end(k2)
}

// Random runs, some repeated and some not, with buffers freed in any
// order and some kept to the end: no take overlaps a live buffer, every
// buffer is zeroed, and a kept one is not written by the runs after it.
func TestPoolPlanRandom(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 99))
			p := NewPool()
			type op struct{ take, free int } // take > 0: a size; else free the free-th live one
			var script []op
			newScript := func() {
				script = script[:0]
				live := 0
				for range 40 {
					if live > 0 && r.IntN(3) == 0 {
						script = append(script, op{free: r.IntN(live)})
						live--
						continue
					}
					script = append(script, op{take: 1 + r.IntN(3000)})
					if r.IntN(2) == 0 { // sizes that recur, as in a model
						script[len(script)-1].take = 100 * (1 + r.IntN(4))
					}
					live++
				}
			}
			newScript()
			var kept []map[int][]uint32
			for run := range 30 {
				if r.IntN(4) == 0 {
					newScript()
				}
				// Some runs swap two neighbouring takes, as workers
				// taking their scratch in another order do.
				ops := script
				if r.IntN(3) == 0 {
					ops = slices.Clone(script)
					if i := r.IntN(len(ops) - 1); ops[i].take > 0 && ops[i+1].take > 0 {
						ops[i], ops[i+1] = ops[i+1], ops[i]
					}
				}
				pr := startRun(t, p)
				var order []int
				for _, o := range ops {
					if o.take > 0 {
						order = append(order, pr.take(o.take))
						continue
					}
					k := order[o.free]
					order = append(order[:o.free], order[o.free+1:]...)
					pr.free(k)
				}
				var keep []int
				if len(order) > 0 && run%3 == 0 {
					keep = append(keep, order[r.IntN(len(order))])
				}
				kept = append(kept, pr.end(keep...))
			}
			for i, m := range kept {
				for k, b := range m {
					for j, v := range b {
						if v != uint32(k+1) {
							t.Fatalf("run %d kept take %d: element %d is %d after later runs", i, k, j, v)
						}
					}
				}
			}
		})
	}
}

// A run whose workers take their scratch in another order than the
// planned run did (two goroutines of one node, in whichever order they
// get there) is still served from the plan: its scratch lies in the
// plan's arena, the plan is kept, no take overlaps a live buffer, nothing
// but the output comes from the heap, and a buffer served at another
// take's place that leaves with a value takes the plan's arena with it.
func TestPoolPlanReordered(t *testing.T) {
	p := NewPool()
	var pl *plan // once built
	inArena := func(b []uint32) bool {
		base := addr(pl.arena)
		return addr(b) >= base && addr(b) < base+uintptr(8*len(pl.arena))
	}
	// Three nodes, each taking its input's successor and two workers'
	// scratch (sizes 700+i and 900+i, swapped where bit i of swap is
	// set), the scratch dying with the node. keep keeps the first
	// node's first scratch buffer to the end, as an output.
	run := func(swap int, keep bool) {
		pr := startRun(t, p)
		x := pr.take(5000)
		var kept []int
		for i := range 3 {
			sizes := []int{700 + i, 900 + i}
			if swap>>i&1 != 0 {
				sizes[0], sizes[1] = sizes[1], sizes[0]
			}
			var ks []int
			for _, n := range sizes {
				k := pr.take(n)
				if pl != nil && !keep && !inArena(pr.live[k]) {
					t.Errorf("swap %03b: node %d's scratch of %d uint32s is not in the plan's arena", swap, i, n)
				}
				ks = append(ks, k)
			}
			y := pr.take(5000)
			for j, k := range ks {
				if keep && i == 0 && j == 0 {
					kept = append(kept, k)
					continue
				}
				pr.free(k)
			}
			pr.free(x)
			x = y
		}
		pr.end(append(kept, x)...)
	}
	run(0, false)
	run(0, false)
	if len(p.plans) != 1 {
		t.Fatalf("%d plans after two runs alike, want 1", len(p.plans))
	}
	pl = p.plans[0]
	// Every order but the planned one, no two runs alike in a row: no
	// other run is planned, so the plan must serve them.
	masks := []int{1, 2, 4, 3, 5, 6, 7}
	for _, m := range append(masks, masks...) {
		run(m, false)
		if len(p.plans) != 1 || p.plans[0] != pl {
			t.Fatalf("swap %03b: the plan was dropped or replaced (%d plans)", m, len(p.plans))
		}
	}
	r := New(context.Background(), 0)
	r.SetPool(p)
	next := 0
	lean := func() { // run without the checks, in the orders in turn
		mk := func(n int) []uint32 {
			b, _ := Make[uint32](r, n)
			p.Ref(addr(b))
			return b
		}
		swap := masks[next%len(masks)]
		next++
		x := mk(5000)
		for i := range 3 {
			a, b := 700+i, 900+i
			if swap>>i&1 != 0 {
				a, b = b, a
			}
			s1, s2 := mk(a), mk(b)
			y := mk(5000)
			p.Unref(addr(s1))
			p.Unref(addr(s2))
			p.Unref(addr(x))
			x = y
		}
		p.End()
	}
	if allocs := testing.AllocsPerRun(20, lean); allocs != 2 {
		t.Errorf("%v allocations a run with its scratch reordered, want the output's 2", allocs)
	}
	run(1, true) // the first node's 900 taken first, at the plan's place for its 700
	if len(p.plans) != 0 {
		t.Fatalf("%d plans after a buffer from the arena left the pool, want 0", len(p.plans))
	}
}
