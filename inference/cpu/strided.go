package cpu

// Strided walks: the loop shared by broadcasting (broadcastPlan.runs) and
// Transpose (tpWalk), which read one or more operands along an
// output's dimensions at a step per dimension (0 where an operand
// broadcasts), the output's last dimension run by run.

// mergeDims drops an output's dimensions of size 1 and merges each
// dimension into its outer neighbour where every operand steps alike
// (strides[k][d-1] = strides[k][d]·shape[d]): the fewest, longest runs.
// strides[k][d] is operand k's step along dimension d of shape.
func mergeDims(shape []int, strides [][]int) (dims []int, merged [][]int) {
	dims = make([]int, 0, len(shape))
	merged = make([][]int, len(strides))
	for k := range merged {
		merged[k] = make([]int, 0, len(shape))
	}
	for d, e := range shape {
		if e == 1 {
			continue
		}
		last := len(dims) - 1
		alike := last >= 0
		for k := range strides {
			alike = alike && merged[k][last] == strides[k][d]*e
		}
		if alike {
			dims[last] *= e
			for k := range strides {
				merged[k][last] = strides[k][d]
			}
			continue
		}
		dims = append(dims, e)
		for k := range strides {
			merged[k] = append(merged[k], strides[k][d])
		}
	}
	return dims, merged
}

// stridedWalk calls f for each run of the n output elements over dims
// (mergeDims's), a run being the last dimension (one element when dims is
// empty): o its first output element, at[k] operand k's offset of the
// element it reads there. An odometer over the outer dimensions keeps the
// offsets; f must not keep at.
func stridedWalk(n int, dims []int, strides [][]int, f func(o int, at []int)) {
	w := stridedWalker{dims: dims, strides: strides, at: make([]int, len(strides)), idx: make([]int, max(0, len(dims)-1))}
	w.walk(n, f)
}

// A stridedWalker is a stridedWalk over dims and strides (mergeDims's)
// that a kernel's plan keeps, with the odometer and the offsets it needs,
// so that walking again allocates nothing.
type stridedWalker struct {
	dims    []int
	strides [][]int
	at, idx []int // len(strides), len(dims)-1
}

// newStridedWalker plans the walk of an output of the given shape whose
// operand k steps strides[k][d] along dimension d (mergeDims's arguments).
func newStridedWalker(shape []int, strides [][]int) *stridedWalker {
	dims, merged := mergeDims(shape, strides)
	return &stridedWalker{dims: dims, strides: merged, at: make([]int, len(strides)), idx: make([]int, max(0, len(dims)-1))}
}

// walk is stridedWalk(n, w.dims, w.strides, f).
func (w *stridedWalker) walk(n int, f func(o int, at []int)) {
	if n == 0 {
		return // a dimension may be 0
	}
	if len(w.dims) == 0 {
		clear(w.at)
		f(0, w.at)
		return
	}
	w.start(0, w.at, w.idx)
	inner := w.dims[len(w.dims)-1]
	for o := 0; o < n; o += inner {
		f(o, w.at)
		w.next(w.at, w.idx)
	}
}

// start sets the odometer idx (len(dims)−1 entries) and the offsets at
// (one per operand) to run r of the walk, which has at least one
// dimension and one run (no dimension 0): a walk split among goroutines
// starts each part at its first run, with an odometer of its own.
func (w *stridedWalker) start(r int, at, idx []int) {
	dims, strides := w.dims, w.strides
	clear(at)
	for d := len(dims) - 2; d >= 0; d-- {
		idx[d] = r % dims[d]
		r /= dims[d]
		for j := range at {
			at[j] += idx[d] * strides[j][d]
		}
	}
}

// next moves the odometer idx and the offsets at to the next run.
func (w *stridedWalker) next(at, idx []int) {
	dims, strides := w.dims, w.strides
	for d := len(dims) - 2; d >= 0; d-- {
		idx[d]++
		for j := range at {
			at[j] += strides[j][d]
		}
		if idx[d] < dims[d] {
			return
		}
		for j := range at {
			at[j] -= strides[j][d] * dims[d]
		}
		idx[d] = 0
	}
}

// innerRun is the length of stridedWalk's runs over dims and operand k's
// step along them.
func innerRun(dims []int, strides [][]int, k int) (length, step int) {
	if len(dims) == 0 {
		return 1, 0
	}
	return dims[len(dims)-1], strides[k][len(dims)-1]
}
