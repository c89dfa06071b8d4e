package cpu

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// The tree ensembles of ai.onnx.ml: TreeEnsembleRegressor and
// TreeEnsembleClassifier (ml 1 and 3) and TreeEnsemble (ml 5). What they
// compute is opsem's (TreeEnsembleOf, FinishRegression,
// FinishClassification); the preparer lays each ensemble out once per
// model (treelayout.go), and a run gathers blocks of rows into compact
// columns of the compare type and walks every tree over each block, the
// blocks spread over the kernel workers.

func init() {
	for _, op := range []string{"TreeEnsembleRegressor", "TreeEnsembleClassifier", "TreeEnsemble"} {
		registerML(op, teKernel)
		registerPrepare(MLDomain+"."+op, tePrepare)
	}
	registerTypes(MLDomain+".TreeEnsembleRegressor", inference.Float64)
	registerTypes(MLDomain+".TreeEnsembleClassifier", inference.Float64, inference.String)
	registerTypes(MLDomain+".TreeEnsemble", inference.Float64)
}

// tePrepare reads, checks and lays out a node's ensemble.
func tePrepare(n opsem.Node) (any, error) {
	e, err := opsem.TreeEnsembleOf(n)
	if err != nil {
		return nil, err
	}
	return teCompile(e, teChooseLayout)
}

// The blocking of a run. A part of the loop gathers a group of up to
// teGroupRows rows at a time, in tiles of teModel.tileRows rows; then,
// for each block of trees whose layout takes about teTreeBlockBytes
// (teModel.treeBlocks), each tile walks every tree of the block. A tree
// block stays in the level-2 cache while the group's tiles walk it, a
// tile in the level-1 cache while the block's trees walk it.
const (
	teGroupRows      = 4096
	teTreeBlockBytes = 256 << 10
)

// teKernel runs a tree ensemble on X, [N, F] (or [F], one row): a
// regressor's Y is float32 [N, n_targets]; a classifier's are its labels
// [N] (int64 or string) and float32 scores [N, classes]; TreeEnsemble's Y
// is [N, n_targets] of X's type (float32, float64 or float16).
func teKernel(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	x, err := requiredArg(in, 0, "X")
	if err != nil {
		return nil, err
	}
	m, _ := n.Prepared.(*teModel)
	if m == nil { // a graph nested in another, or a node run alone
		v, err := tePrepare(n)
		if err != nil {
			return nil, err
		}
		m = v.(*teModel)
	}
	switch dt := x.DType(); {
	case n.OpType == "TreeEnsemble":
		if dt != inference.Float32 && dt != inference.Float64 && dt != inference.Float16 {
			return nil, wantType(0, x, "float32, float64 or float16")
		}
	case dt != inference.Float32 && dt != inference.Float64 && dt != inference.Int64 && dt != inference.Int32:
		return nil, wantType(0, x, "float32, float64, int64 or int32")
	}
	var rows, feats int
	switch x.Rank() {
	case 1:
		rows, feats = 1, x.Dim(0)
	case 2:
		rows, feats = x.Dim(0), x.Dim(1)
	default:
		return nil, fmt.Errorf("X is %v; want [N, F] or [F]: %w", x, inference.ErrShape)
	}
	if feats <= m.e.MaxFeature {
		return nil, fmt.Errorf("X is %v: the ensemble reads feature %d: %w", x, m.e.MaxFeature, inference.ErrShape)
	}
	r, err := opsem.Plan(n, in, func() (*teRun, error) { return newTeRun(m, x.DType(), rows, feats), nil })
	if err != nil {
		return nil, err
	}
	if r.m != m {
		r = newTeRun(m, x.DType(), rows, feats)
	}
	return r.run(n, x)
}

// teRun is a node's plan for one input type and shape (opsem.Plan): the
// block geometry, and the operands of the run under way, which the
// parallel loop (body, bound once) reads.
type teRun struct {
	m                    *teModel
	dtype                inference.DType
	rows, feats, targets int
	use64                bool
	width, block, blocks int   // columns; rows a block; blocks
	group                int   // blocks a group
	parts                int   // the loop's chunks, each with its scratch
	shape                []int // the scores' [rows, targets]; the labels' is shape[:1]

	// The run under way.
	limits  *limit.Run
	x32     []float32
	x64     []float64
	xi64    []int64
	xi32    []int32
	xh      []inference.Half
	xb32    []float32
	xb64    []float64
	leaves  []int32
	acc     []float64
	has     []bool
	out32   []float32
	out64   []float64
	out16   []inference.Half
	labels  []int64
	strings []string
	mu      sync.Mutex
	err     error
	body    func(lo, hi int)
}

func newTeRun(m *teModel, dtype inference.DType, rows, feats int) *teRun {
	r := &teRun{m: m, dtype: dtype, rows: rows, feats: feats, targets: m.e.Targets, use64: m.e.CompareIn64(dtype)}
	r.width = len(m.pos) + len(m.neg)
	size := 4
	if r.use64 {
		size = 8
	}
	r.block = m.tileRows
	r.group = max(1, min(teGroupRows/r.block, (1<<20)/(r.block*(r.width*size+9*r.targets))))
	r.blocks = (rows + r.block - 1) / r.block
	r.shape = []int{rows, r.targets}
	r.body = r.process
	return r
}

// run computes the outputs for x.
func (r *teRun) run(n opsem.Node, x inference.Tensor) ([]inference.Tensor, error) {
	m := r.m
	classifier := m.e.Classifier != nil
	shape := r.shape
	var err error
	switch {
	case n.OpType == "TreeEnsemble" && r.dtype == inference.Float64:
		r.out64, err = limit.MakeOverwritten[float64](n.Run, r.rows, r.targets)
	case n.OpType == "TreeEnsemble" && r.dtype == inference.Float16:
		r.out16, err = limit.MakeOverwritten[inference.Half](n.Run, r.rows, r.targets)
	default:
		r.out32, err = limit.MakeOverwritten[float32](n.Run, r.rows, r.targets)
	}
	if err == nil && classifier {
		if m.e.Classifier.LabelsString != nil {
			r.strings, err = limit.Make[string](n.Run, r.rows)
		} else {
			r.labels, err = limit.MakeOverwritten[int64](n.Run, r.rows)
		}
	}
	if err != nil {
		return nil, err
	}
	if r.rows > 0 {
		if err := r.compute(n, x); err != nil {
			return nil, err
		}
	}
	defer func() { r.out32, r.out64, r.out16, r.labels, r.strings = nil, nil, nil, nil, nil }()
	if !classifier {
		switch {
		case r.out64 != nil:
			return opsem.Single(n, shape, r.out64)
		case r.out16 != nil:
			return opsem.Single(n, shape, r.out16)
		}
		return opsem.Single(n, shape, r.out32)
	}
	var labels inference.Tensor
	if r.strings != nil {
		labels, err = opsem.Output(n, 0, shape[:1], r.strings)
	} else {
		labels, err = opsem.Output(n, 0, shape[:1], r.labels)
	}
	if err != nil {
		return nil, err
	}
	scores, err := opsem.Output(n, 1, shape, r.out32)
	if err != nil {
		return nil, err
	}
	if n.Memo == nil {
		return []inference.Tensor{labels, scores}, nil
	}
	return n.Results(2), nil
}

// compute fills the outputs, spreading the blocks over the workers.
func (r *teRun) compute(n opsem.Node, x inference.Tensor) error {
	m := r.m
	switch r.dtype {
	case inference.Float32:
		r.x32 = dataOf[float32](x)
	case inference.Float64:
		r.x64 = dataOf[float64](x)
	case inference.Int64:
		r.xi64 = dataOf[int64](x)
	case inference.Int32:
		r.xi32 = dataOf[int32](x)
	case inference.Float16:
		r.xh = dataOf[inference.Half](x)
	}
	defer func() {
		r.x32, r.x64, r.xi64, r.xi32, r.xh = nil, nil, nil, nil, nil
		r.xb32, r.xb64, r.leaves, r.acc, r.has = nil, nil, nil, nil, nil
		r.limits, r.err = nil, nil
	}()
	r.parts = 1
	if work := r.rows * (m.depthSum + len(m.trees)); r.blocks > 1 && work >= nnSgemmSerialFlops {
		r.parts = min(r.blocks, runtime.GOMAXPROCS(0))
	}
	var err error
	group := min(r.group, r.blocks) * r.block // rows
	if r.use64 {
		m.layout64()
		r.xb64, err = limit.MakeOverwritten[float64](n.Run, r.parts, group, r.width)
	} else {
		r.xb32, err = limit.MakeOverwritten[float32](n.Run, r.parts, group, r.width)
	}
	if err == nil {
		r.leaves, err = limit.MakeOverwritten[int32](n.Run, r.parts, r.block)
	}
	if err == nil {
		r.acc, err = limit.MakeOverwritten[float64](n.Run, r.parts, group, r.targets)
	}
	if err == nil && m.track {
		r.has, err = limit.MakeOverwritten[bool](n.Run, r.parts, group, r.targets)
	}
	if err != nil {
		return err
	}
	r.limits = n.Run
	parallelSplit(r.blocks, r.parts, r.body)
	return r.err
}

// process runs blocks lo…hi-1, the chunk of one part of the loop.
func (r *teRun) process(lo, hi int) {
	part := (lo*r.parts + r.blocks - 1) / r.blocks // chunk i starts at blocks·i/parts
	if r.use64 {
		teBlocks(r, r.m.l64, r.xb64, part, lo, hi)
	} else {
		teBlocks(r, r.m.l32, r.xb32, part, lo, hi)
	}
}

// fail records the run's first error.
func (r *teRun) fail(err error) {
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.mu.Unlock()
}

// teBlocks computes blocks lo…hi-1 in compare type T with part's scratch
// (xb holds every part's), a group at a time: its rows are gathered, each
// tree block walks its row blocks, the leaves' weights are aggregated
// into acc, and each row is finished into the outputs.
func teBlocks[T teReal](r *teRun, l *teLayout[T], xb []T, part, lo, hi int) {
	m, w, k := r.m, r.width, r.targets
	group := min(r.group, r.blocks) * r.block
	xb = xb[part*group*w : (part+1)*group*w]
	leaves := r.leaves[part*r.block : (part+1)*r.block]
	acc := r.acc[part*group*k : (part+1)*group*k]
	var has []bool
	if m.track {
		has = r.has[part*group*k : (part+1)*group*k]
	}
	for g := lo; g < hi; g += r.group {
		if err := r.limits.Err(); err != nil {
			r.fail(err)
			return
		}
		row0 := g * r.block
		rows := min(min(g+r.group, hi)*r.block, r.rows) - row0
		switch {
		case r.x32 != nil:
			teGather(xb, r.block, r.x32, r.feats, m.pos, m.neg, row0, rows)
		case r.x64 != nil:
			teGather(xb, r.block, r.x64, r.feats, m.pos, m.neg, row0, rows)
		case r.xi64 != nil:
			teGather(xb, r.block, r.xi64, r.feats, m.pos, m.neg, row0, rows)
		case r.xi32 != nil:
			teGather(xb, r.block, r.xi32, r.feats, m.pos, m.neg, row0, rows)
		default:
			teGatherHalf(xb, r.block, r.xh, r.feats, m.pos, m.neg, row0, rows)
		}
		clear(acc[:rows*k])
		if has != nil {
			clear(has[:rows*k])
		}
		for tb := 1; tb < len(m.treeBlocks); tb++ {
			trees := m.trees[m.treeBlocks[tb-1]:m.treeBlocks[tb]]
			for b0 := 0; b0 < rows; b0 += r.block {
				n := min(r.block, rows-b0)
				bx := xb[b0*w : (b0+r.block)*w]
				bacc := acc[b0*k : (b0+n)*k]
				var bhas []bool
				if has != nil {
					bhas = has[b0*k : (b0+n)*k]
				}
				for t := range trees {
					tr := &trees[t]
					switch tr.kind {
					case tePerfect:
						size := 1<<tr.depth - 1
						tePerfectLeaves(l.perf[tr.at:int(tr.at)+size], int(tr.depth), bx, r.block, n, leaves)
						m.aggregateSlots(tr, leaves[:n], bacc, bhas)
					case tePointer:
						tePointerLeaves(l.ptr, tr.at, bx, r.block, n, leaves)
						m.aggregate(leaves[:n], bacc, bhas)
					default:
						teGeneralLeaves(m.gen, m.e.Members, tr.at, bx, r.block, n, leaves)
						m.aggregate(leaves[:n], bacc, bhas)
					}
				}
			}
		}
		r.finish(row0, rows, acc, has)
	}
}

// teInput are the element types of X the gather converts.
type teInput interface {
	float32 | float64 | int64 | int32
}

// teGather converts rows row0… of x ([·, feats]) into tiles of xb: the
// features pos, then the features neg negated, each column of a tile
// tileRows values of consecutive rows.
func teGather[I teInput, T teReal](xb []T, tileRows int, x []I, feats int, pos, neg []int32, row0, rows int) {
	w := len(pos) + len(neg)
	for i := range rows {
		src := x[(row0+i)*feats : (row0+i+1)*feats]
		tile := xb[i/tileRows*tileRows*w:]
		r := i % tileRows
		for j, f := range pos {
			tile[j*tileRows+r] = T(src[f])
		}
		tile = tile[len(pos)*tileRows:]
		for j, f := range neg {
			tile[j*tileRows+r] = -T(src[f])
		}
	}
}

// teGatherHalf is teGather for float16, which converts to float32 first.
func teGatherHalf[T teReal](xb []T, tileRows int, x []inference.Half, feats int, pos, neg []int32, row0, rows int) {
	w := len(pos) + len(neg)
	for i := range rows {
		src := x[(row0+i)*feats : (row0+i+1)*feats]
		tile := xb[i/tileRows*tileRows*w:]
		r := i % tileRows
		for j, f := range pos {
			tile[j*tileRows+r] = T(src[f].Float32())
		}
		tile = tile[len(pos)*tileRows:]
		for j, f := range neg {
			tile[j*tileRows+r] = -T(src[f].Float32())
		}
	}
}

// aggregateSlots aggregates the leaves of perfect tree tr whose slots
// are slots, one per row of the block, as aggregate does, reading the
// slots' targets and values when fast.
func (m *teModel) aggregateSlots(tr *teTree, slots []int32, acc []float64, has []bool) {
	end := int(tr.slot) + 1<<tr.depth
	if m.fast {
		teAdd(m.slotTarget[tr.slot:end], m.slotValue[tr.slot:end], m.e.Targets, slots, acc)
		return
	}
	leafOf := m.slots[tr.slot:end]
	for i, s := range slots {
		slots[i] = leafOf[s]
	}
	m.aggregate(slots, acc, has)
}

// teAdd adds value[l] to target target[l] of row i's acc, [rows, k], for
// each row's leaf (or slot) l = leaves[i].
func teAdd(target []int32, value []float64, k int, leaves []int32, acc []float64) {
	if k == 1 {
		for i, l := range leaves {
			acc[i] += value[l]
		}
		return
	}
	for i, l := range leaves {
		acc[i*k+int(target[l])] += value[l]
	}
}

// aggregate adds the weights of leaves (one per row of the block) to
// the rows' acc, [rows, targets], or keeps their least or greatest,
// marking in has (when tracked) the targets a weight reached.
func (m *teModel) aggregate(leaves []int32, acc []float64, has []bool) {
	if m.fast {
		teAdd(m.leafTarget, m.leafValue, m.e.Targets, leaves, acc)
		return
	}
	k, start, target, weight := m.e.Targets, m.leafStart, m.leafTarget, m.leafWeight
	switch {
	case m.e.Aggregate == opsem.AggregateMin:
		for i, l := range leaves {
			for j := start[l]; j < start[l+1]; j++ {
				at := i*k + int(target[j])
				if w := weight[j]; !has[at] || w < acc[at] {
					acc[at] = w
				}
				has[at] = true
			}
		}
	case m.e.Aggregate == opsem.AggregateMax:
		for i, l := range leaves {
			for j := start[l]; j < start[l+1]; j++ {
				at := i*k + int(target[j])
				if w := weight[j]; !has[at] || w > acc[at] {
					acc[at] = w
				}
				has[at] = true
			}
		}
	case has != nil:
		for i, l := range leaves {
			for j := start[l]; j < start[l+1]; j++ {
				at := i*k + int(target[j])
				acc[at] += weight[j]
				has[at] = true
			}
		}
	default:
		for i, l := range leaves {
			for j := start[l]; j < start[l+1]; j++ {
				acc[i*k+int(target[j])] += weight[j]
			}
		}
	}
}

// finish turns the block's aggregated rows into outputs rows row0….
func (r *teRun) finish(row0, rows int, acc []float64, has []bool) {
	e, k := r.m.e, r.targets
	for i := range rows {
		p, h := acc[i*k:i*k+k], r.m.reached
		if has != nil {
			h = has[i*k : i*k+k]
		}
		if c := e.Classifier; c != nil {
			label := e.FinishClassification(p, h)
			if r.strings != nil {
				r.strings[row0+i] = c.LabelsString[label]
			} else {
				r.labels[row0+i] = c.LabelsInt64[label]
			}
		} else {
			e.FinishRegression(p, h)
		}
		at := (row0 + i) * k
		switch {
		case r.out64 != nil:
			copy(r.out64[at:at+k], p)
		case r.out16 != nil:
			for j, v := range p {
				r.out16[at+j] = inference.HalfFromFloat32(float32ToOdd(v))
			}
		default:
			out := r.out32[at : at+k]
			for j, v := range p {
				out[j] = float32(v)
			}
		}
	}
}
