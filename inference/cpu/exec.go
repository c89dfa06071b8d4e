package cpu

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/graph/passes"
	"github.com/beamml/beamml/inference/internal/family"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// kernel computes one operator. n is the node and the version of ai.onnx
// the model imports (opsem.Node, which also builds the error for a case the
// runtime does not implement). in holds one tensor per input the node
// names: an optional input left out in the middle arrives as the zero Tensor
// (DType 0), and trailing ones left out are not there at all, so read
// optional inputs with arg. A kernel returns one tensor per node output (the
// trailing optional ones may be omitted) and fails with an error that names
// what was wrong; the executor adds the node. The in slice is reused for the
// next node: a kernel must not keep it (the tensors in it are immutable and
// may be kept).
type kernel func(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error)

// kernels maps operators to their kernels, by opKey; filled by init
// functions of the op files, read-only afterwards. mlKernels holds those
// of ai.onnx.ml again, by op type, for kernelOf.
var (
	kernels   = map[string]kernel{}
	mlKernels = map[string]kernel{}
)

// kernelOf is n's kernel, or nil: kernels[opKey(n)], without building
// the key of an ai.onnx.ml node (an allocation every run).
func kernelOf(n *graph.Node) kernel {
	switch n.Domain {
	case "":
		return kernels[n.OpType]
	case MLDomain:
		return mlKernels[n.OpType]
	}
	return nil
}

// MLDomain is the domain of the classical machine-learning operators
// (TreeEnsembleClassifier, LinearRegressor, …); registerML adds theirs.
const MLDomain = "ai.onnx.ml"

// opKey is the key of n's kernel: its op type for ai.onnx, the domain and
// op type ("ai.onnx.ml.Scaler") for another domain.
func opKey(n *graph.Node) string {
	if n.Domain == "" {
		return n.OpType
	}
	return n.Domain + "." + n.OpType
}

// registerML adds the kernel of op, an operator of the ai.onnx.ml domain;
// the kernel's node carries the version of ai.onnx.ml the model imports.
func registerML(op string, k kernel) {
	key := MLDomain + "." + op
	if _, dup := kernels[key]; dup {
		panic("cpu: kernel registered twice: " + key)
	}
	kernels[key], mlKernels[op] = k, k
	family.Record("cpu", key) // called from the init function, as register's
}

// register adds op's kernel; it is called from the init function of the
// op's family file, ops_<family>.go (family.Record reads the family off it).
func register(op string, k kernel) {
	if _, dup := kernels[op]; dup {
		panic("cpu: kernel registered twice: " + op)
	}
	kernels[op] = k
	family.Record("cpu", op)
}

// control-flow operators run subgraphs; the executor implements them.
var control = map[string]bool{"If": true, "Loop": true, "Scan": true}

// Compile checks that every node of g (and of its subgraphs) has a kernel,
// runs the graph passes (graphPasses: constant folding, then the
// optimising rewrites unless b is Unoptimized), prepares the nodes'
// weights and layouts (prepare, which checks what Check's preparers
// check) and returns the model. Compile is the graph.Compiler method of
// Backend.
func (b Backend) Compile(g *graph.Graph) (inference.Model, error) {
	if err := g.EnsureSorted(); err != nil {
		return nil, err
	}
	if err := checkOps(g); err != nil {
		return nil, err
	}
	if err := checkTypes(g, nil); err != nil {
		return nil, err
	}
	if err := passes.Optimize(g, b.graphPasses()...); err != nil {
		return nil, err
	}
	m := NewModel(g)
	var err error
	if m.prepared, err = prepare(g); err != nil {
		return nil, err
	}
	m.sched.attachPrepared(g, m.prepared)
	m.bytes += preparedSize(m.prepared)
	return m, nil
}

// CompileWith is Compile: the CPU backend computes in float32 in every
// precision (inference.Precision).
func (b Backend) CompileWith(g *graph.Graph, o graph.Options) (inference.Model, error) {
	if _, err := inference.ParsePrecision(string(o.Precision)); err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	return b.Compile(g)
}

// Check reports the first node of g (or of its subgraphs) that the CPU
// backend cannot run: an operator outside the ai.onnx and ai.onnx.ml
// domains or without a kernel, as an *inference.UnsupportedOpError, one
// that reads or makes an element type its kernel does not compute
// (checkTypes), as one that wraps inference.ErrUnsupportedType, or one
// whose attributes its preparer refuses (a tree ensemble that is not one, a
// LinearClassifier whose coefficients do not fit its classes:
// inference.ErrBadModel naming the node and the attribute). A backend that
// runs on the host what it has no kernel for (inference/cuda) checks with
// it.
func Check(g *graph.Graph) error {
	if err := checkOps(g); err != nil {
		return err
	}
	if err := checkTypes(g, nil); err != nil {
		return err
	}
	return checkPrepared(g)
}

func checkOps(g *graph.Graph) error {
	for _, n := range g.Nodes {
		if n.Domain != "" && n.Domain != MLDomain {
			return &inference.UnsupportedOpError{Node: n.Name, Op: opKey(n), Detail: "only the ai.onnx and ai.onnx.ml domains are implemented"}
		}
		if _, ok := kernels[opKey(n)]; !ok && (n.Domain != "" || !control[n.OpType] && seqKernels[n.OpType] == nil) {
			return &inference.UnsupportedOpError{Node: n.Name, Op: opKey(n), Opset: g.OpsetOf(n)}
		}
		for _, sub := range n.Subgraphs() {
			if err := checkOps(sub); err != nil {
				return err
			}
		}
	}
	return nil
}

// NewModel returns the model that runs g as it is, without graph passes
// and without packing its weights (Compile does both): for a backend that
// has run its own passes and checked g (Check) and runs some of it, or all
// of it, on the host.
func NewModel(g *graph.Graph) *Model {
	m := &Model{g: g, pooled: true, sched: newSchedule(g, nil)}
	for _, t := range g.Initializers {
		m.bytes += t.ByteSize()
	}
	for _, n := range g.Nodes {
		if control[n.OpType] || seqKernels[n.OpType] != nil {
			m.pooled = false // values live on in subgraphs and sequences, where runObserved does not count them
		}
	}
	// Only single-node kernels' outputs are kept: sequence operators keep
	// their values apart (runSeq).
	static, some := graph.ShapeDetermined(g), false
	for i, n := range g.Nodes {
		static[i] = static[i] && kernelOf(n) != nil
		some = some || static[i]
	}
	if some {
		m.static, m.shapeOuts = static, map[string]map[string]inference.Tensor{}
	}
	return m
}

// runState is what a run of a graph brings to runObserved beyond the
// graph: its schedule (with a model's packed weights), the outputs of the
// nodes that the feeds' shapes determine (graph.ShapeDetermined), either
// kept from an earlier run with the same shapes or to be kept from this
// one, and what one concurrent run keeps from one run to the next (a
// frame's, a loop body's): the nodes' memos, the values' slots and the
// executor's slices.
type runState struct {
	sched  *schedule
	static []bool                      // nil: no node's outputs are kept
	kept   map[string]inference.Tensor // the static nodes' outputs, by value name
	keep   map[string]inference.Tensor // where this run records them, or nil

	memos []opsem.Memo // one per node of the graph, or nil
	vals  values
	in    []inference.Tensor
	outs  []inference.Tensor // keptOutputs's
	res   []inference.Tensor // runObserved's, for the graph's outputs

	times []time.Duration // each node's time, added to by runObserved; nil: not timed (Model.Profile)
}

// memo is node i's memo, or nil.
func (st *runState) memo(i int) *opsem.Memo {
	if st.memos == nil {
		return nil
	}
	return &st.memos[i]
}

// isStatic reports whether node i's outputs depend only on the feeds'
// shapes.
func (st *runState) isStatic(i int) bool {
	return st.static != nil && st.static[i]
}

// keptOutputs returns node n's outputs as an earlier run computed them.
func (st *runState) keptOutputs(n *graph.Node) []inference.Tensor {
	st.outs = st.outs[:0]
	for _, name := range n.Outputs {
		st.outs = append(st.outs, st.kept[name])
	}
	return st.outs
}

// record keeps copies of node n's outputs (the run's own may be pooled
// buffers, handed out again).
func (st *runState) record(n *graph.Node, outs []inference.Tensor) {
	for j, name := range n.Outputs {
		if name != "" && j < len(outs) {
			st.keep[name] = cloneTensor(outs[j])
		}
	}
}

// cloneTensor copies t's elements, of any type (the zero Tensor for the
// zero Tensor).
func cloneTensor(t inference.Tensor) inference.Tensor {
	if t.DType() == inference.String {
		c, _ := inference.New(t.Shape(), slices.Clone(dataOf[string](t)))
		return c
	}
	c, _ := inference.Zeros(t.DType(), t.Shape())
	copy(c.Bytes(), t.Bytes())
	return c
}

// signature appends to b the element types and shapes of the feeds of
// g's inputs and of the overridable initializers fed: what the static
// nodes' outputs depend on.
func signature(b []byte, g *graph.Graph, feeds map[string]inference.Tensor) []byte {
	for _, ins := range [2][]graph.Value{g.Inputs, g.Overridable} {
		for _, in := range ins {
			t, ok := feeds[in.Name]
			if !ok {
				b = append(b, 0xff)
				continue
			}
			b = append(b, byte(t.DType()), byte(t.Rank()))
			for k := range t.Rank() {
				b = binary.AppendUvarint(b, uint64(t.Dim(k)))
			}
		}
	}
	return b
}

// Model is a graph compiled for the CPU. Concurrent Runs are safe: each
// takes a frame of its own from the model's, with its pool of buffers
// (limit.Pool) and its nodes' memos (opsem.Memo), so that after the first
// runs a run with the shapes of the one before allocates only its outputs.
type Model struct {
	g        *graph.Graph
	bytes    int64
	pooled   bool                // runs take their buffers from pools
	prepared map[*graph.Node]any // packed weights, by node (prepare)
	sched    *schedule           // the graph's, with those weights
	static   []bool              // graph.ShapeDetermined, nil when no node is

	mu     sync.Mutex
	frames []*frame // idle frames, one per run in flight at the busiest
	// shapeOuts holds, per signature of the feeds' shapes, the outputs of
	// the static nodes as the first run with those shapes computed them.
	shapeOuts map[string]map[string]inference.Tensor
}

// A frame is what one concurrent run of a model reuses from the run it
// follows: its limits, its pool of buffers and its executor state.
type frame struct {
	run  limit.Run
	pool *limit.Pool // nil when the model's runs are not pooled
	st   runState
}

// maxSignatures bounds Model.shapeOuts: a model fed ever new shapes
// (one per sequence length) starts over when it is full.
const maxSignatures = 16

// frame takes an idle frame, or a new one.
func (m *Model) frame() *frame {
	m.mu.Lock()
	defer m.mu.Unlock()
	if k := len(m.frames); k > 0 {
		f := m.frames[k-1]
		m.frames = m.frames[:k-1]
		return f
	}
	return &frame{st: runState{sched: m.sched, memos: make([]opsem.Memo, len(m.g.Nodes))}}
}

// putFrame ends f's run and keeps it for the next.
func (m *Model) putFrame(f *frame) {
	if p := f.run.Pool(); p != nil {
		p.End()
	}
	st := &f.st
	st.vals.end()
	clear(st.in)
	clear(st.outs)
	clear(st.res)
	st.static, st.kept, st.keep = nil, nil, nil
	m.mu.Lock()
	m.frames = append(m.frames, f)
	m.mu.Unlock()
}

// Graph returns the graph the model runs.
func (m *Model) Graph() *graph.Graph { return m.g }

// Inputs describes the graph inputs.
func (m *Model) Inputs() []inference.TensorInfo { return infos(m.g.Inputs) }

// Outputs describes the graph outputs.
func (m *Model) Outputs() []inference.TensorInfo { return infos(m.g.Outputs) }

func infos(vs []graph.Value) []inference.TensorInfo {
	out := make([]inference.TensorInfo, len(vs))
	for i, v := range vs {
		out[i] = inference.TensorInfo{Name: v.Name, DType: v.DType, Shape: slices.Clone(v.Shape), Labels: slices.Clone(v.Labels)}
	}
	return out
}

// ByteSize is the size of the initializers and of the weights Compile
// packed beside them.
func (m *Model) ByteSize() int64 { return m.bytes }

// Close does nothing: the model holds only Go memory.
func (m *Model) Close() error { return nil }

// Run executes the graph. Every graph input must be fed, with its declared
// element type and rank; an overridable initializer (graph.Graph's
// Overridable) may be, and the fed tensor replaces it. The run holds at
// most inference.MemoryBudget(ctx) bytes of intermediates live at once (a
// node that would pass it fails with an *inference.ResourceError), stops
// between nodes and in data-driven loops once ctx is done, and returns a
// panic in a kernel as an *inference.PanicError naming the node.
func (m *Model) Run(ctx context.Context, feeds map[string]inference.Tensor) (map[string]inference.Tensor, error) {
	return m.run(ctx, feeds, nil)
}

// NodeTime is the time one node of a model took, summed over the runs of
// a Model.Profile.
type NodeTime struct {
	Node string // the node's name, or its index as "#i" when it has none
	Op   string // its operator, domain-qualified outside the default domain
	Time time.Duration
}

// Profile runs m on feeds runs times as Run runs it (the same plans,
// buffers and threads, once it is warm) and returns the time each node of
// the graph took over those runs, in the graph's order: the kernel's
// time, which for If, Loop and Scan includes their subgraphs. The clock is
// read twice per node; the outputs are discarded.
func (m *Model) Profile(ctx context.Context, feeds map[string]inference.Tensor, runs int) ([]NodeTime, error) {
	times := make([]time.Duration, len(m.g.Nodes))
	for range runs {
		if _, err := m.run(ctx, feeds, times); err != nil {
			return nil, err
		}
	}
	res := make([]NodeTime, len(m.g.Nodes))
	for i, n := range m.g.Nodes {
		res[i] = NodeTime{Node: n.Name, Op: n.OpType, Time: times[i]}
		if n.Name == "" {
			res[i].Node = "#" + strconv.Itoa(i)
		}
		if n.Domain != "" && n.Domain != "ai.onnx" {
			res[i].Op = n.Domain + "." + n.OpType
		}
	}
	return res, nil
}

// run is Run, adding each node's time to times when it is not nil.
func (m *Model) run(ctx context.Context, feeds map[string]inference.Tensor, times []time.Duration) (map[string]inference.Tensor, error) {
	for k, ins := range [2][]graph.Value{m.g.Inputs, m.g.Overridable} {
		for _, in := range ins {
			t, ok := feeds[in.Name]
			switch {
			case !ok && k == 1:
				continue // an overridable initializer keeps its value
			case !ok:
				return nil, fmt.Errorf("cpu: graph input %q is not fed: %w", in.Name, inference.ErrMissingInput)
			case in.DType != 0 && t.DType() != in.DType:
				return nil, fmt.Errorf("cpu: graph input %q is %v, want %v: %w", in.Name, t, in.DType, inference.ErrType)
			case in.Shape != nil && t.Rank() != len(in.Shape):
				return nil, fmt.Errorf("cpu: graph input %q is %v, want rank %d: %w", in.Name, t, len(in.Shape), inference.ErrShape)
			}
		}
	}
	f := m.frame()
	defer m.putFrame(f)
	r, st := &f.run, &f.st
	r.Start(ctx, 0)
	r.SetPool(nil)
	if m.pooled {
		if f.pool == nil {
			f.pool = limit.NewPool()
		}
		r.SetPool(f.pool)
	}
	var key []byte
	if m.static != nil {
		var buf [256]byte
		key = signature(buf[:0], m.g, feeds)
		m.mu.Lock()
		st.static, st.kept = m.static, m.shapeOuts[string(key)]
		m.mu.Unlock()
		if st.kept == nil {
			st.keep = map[string]inference.Tensor{}
		}
	}
	st.times = times
	outs, err := runObserved(ctx, r, m.g, st, feeds, nil, nil)
	st.times = nil
	if err != nil {
		return nil, err
	}
	if st.keep != nil {
		m.mu.Lock()
		if len(m.shapeOuts) >= maxSignatures {
			clear(m.shapeOuts)
		}
		m.shapeOuts[string(key)] = st.keep
		m.mu.Unlock()
	}
	res := make(map[string]inference.Tensor, len(outs))
	for i, o := range m.g.Outputs {
		res[o.Name] = outs[i]
	}
	return res, nil
}

// run executes g with its inputs from feeds and free values from outer,
// under the limits r, and returns its outputs in order.
func run(ctx context.Context, r *limit.Run, g *graph.Graph, feeds, outer map[string]inference.Tensor) ([]inference.Tensor, error) {
	return runObserved(ctx, r, g, &runState{sched: newSchedule(g, outer)}, feeds, outer, nil)
}

// runObserved is run with st's schedule, slots and kept outputs, calling
// observe (when not nil) with every tensor a node of g computes. A panic
// in a kernel (or in the goroutines it started: parallelFor passes theirs
// on) fails the run with an *inference.PanicError naming the node: one
// recover for the whole run, rather than one per node.
//
// The bytes a node's outputs hold count against r from the node that
// computes them to the last node that reads them; a kernel's scratch counts
// while it runs. Feeds, initializers and outer values are not counted: they
// are the caller's.
func runObserved(ctx context.Context, r *limit.Run, g *graph.Graph, st *runState, feeds, outer map[string]inference.Tensor, observe func(string, inference.Tensor)) (_ []inference.Tensor, err error) {
	var n *graph.Node // the node running
	defer func() {
		switch v := recover(); {
		case v != nil && n != nil:
			err = nodeError(g, n, panicError(n, v))
		case v != nil:
			err = fmt.Errorf("cpu: graph %q: %w", g.Name, inference.Recovered("starting the run", v))
		}
	}()
	s, v := st.sched, &st.vals
	v.start(s, feeds, outer)
	in := st.in[:0]
	defer func() { st.in = in }()
	opset := g.Opset()
	for i := range g.Nodes {
		n = g.Nodes[i]
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("cpu: graph %q: stopped before node %v: %w", g.Name, n, err)
		}
		step := &s.steps[i]
		node := opsem.Node{Node: n, Opset: opset, Run: r, Prepared: step.prepared, Memo: st.memo(i)}
		if n.Domain != "" {
			node.Opset = g.OpsetOf(n)
		}
		mark := r.InUse()
		if step.seq != nil {
			err := runSeq(node, step, v)
			r.Reset(mark)
			if err != nil {
				return nil, nodeError(g, n, err)
			}
			if slot := step.out[0]; wantsOutput(node, 0) {
				r.Hold(seqBytes(v.tensors[slot], v.seqs[slot]))
			}
			continue
		}
		in = in[:0]
		for j, slot := range step.in {
			var t inference.Tensor
			if slot != noSlot {
				switch v.kinds[slot] {
				case sequenceValue:
					return nil, fmt.Errorf("cpu: node %v: input %q is a sequence, want a tensor: %w", n, n.Inputs[j], inference.ErrType)
				case noValue:
					return nil, fmt.Errorf("cpu: node %v: input %q has no value: %w", n, n.Inputs[j], inference.ErrBadModel)
				}
				t = v.tensors[slot]
			}
			in = append(in, t)
		}
		pool := r.Pool()
		var pmark int
		if pool != nil {
			pmark = pool.Mark()
		}
		var outs []inference.Tensor
		static := st.isStatic(i)
		if static && st.kept != nil {
			outs = st.keptOutputs(n)
		} else {
			var err error
			var start time.Time
			if st.times != nil {
				start = time.Now()
			}
			if step.control {
				outs, err = runControl(ctx, node, in, v.scope(s, g, outer))
			} else {
				outs, err = step.call.call(node, in)
			}
			if st.times != nil {
				st.times[i] += time.Since(start)
			}
			r.Reset(mark) // the kernel's scratch is garbage now; its outputs are held below
			if err != nil {
				return nil, nodeError(g, n, err)
			}
			if static && st.keep != nil {
				st.record(n, outs)
			}
		}
		for j, slot := range step.out {
			if slot == noSlot {
				continue
			}
			if j >= len(outs) {
				name := n.Outputs[j]
				return nil, fmt.Errorf("cpu: node %v: output %d (%q) not computed: %w", n, j, name, &inference.UnsupportedOpError{Node: n.Name, Op: n.OpType, Opset: opset, Detail: "optional output " + name})
			}
			v.setTensor(slot, outs[j])
			r.Hold(outs[j].ByteSize())
			if pool != nil && step.readLater[j] {
				pool.Ref(dataAddr(outs[j])) // an output nothing reads is left to Sweep
			}
			if observe != nil {
				observe(n.Outputs[j], outs[j])
			}
		}
		for j, slot := range step.in {
			if slot == noSlot || !step.lastRead[j] {
				continue
			}
			if step.computed[j] { // counted by Hold
				t := v.tensors[slot]
				r.Release(seqBytes(t, v.seqs[slot]))
				if pool != nil {
					pool.Unref(dataAddr(t))
				}
			}
			v.drop(slot)
		}
		if pool != nil {
			pool.Sweep(pmark) // the kernel's scratch, and outputs nothing reads
		}
	}
	res := slices.Grow(st.res[:0], len(g.Outputs))[:len(g.Outputs)]
	st.res = res
	for i, slot := range s.outputs {
		if v.kinds[slot] != tensorValue {
			return nil, fmt.Errorf("cpu: graph %q: output %q has no value: %w", g.Name, g.Outputs[i].Name, inference.ErrBadModel)
		}
		res[i] = v.tensors[slot]
	}
	return res, nil
}

// guard runs a kernel, returning a panic in it (or in the goroutines it
// started: parallelFor passes theirs on) as an *inference.PanicError.
func guard(n *graph.Node, kernel func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = panicError(n, v)
		}
	}()
	return kernel()
}

// panicError is the error of v, recovered from a panic in n's kernel.
func panicError(n *graph.Node, v any) error {
	if pe, ok := v.(*inference.PanicError); ok { // from a worker goroutine
		pe.Where = fmt.Sprintf("node %v, %s", n, pe.Where)
		return pe
	}
	return inference.Recovered(fmt.Sprintf("node %v", n), v)
}

// nodeError says which node of which graph failed; a refused allocation
// gets the node and model filled in.
func nodeError(g *graph.Graph, n *graph.Node, err error) error {
	var re *inference.ResourceError
	if errors.As(err, &re) && re.Node == "" {
		re.Node, re.Model = n.String(), g.Name
	}
	return fmt.Errorf("cpu: node %v: %w", n, err)
}

// graphOutput reports whether g outputs the value name.
func graphOutput(g *graph.Graph, name string) bool {
	return slices.ContainsFunc(g.Outputs, func(v graph.Value) bool { return v.Name == name })
}

// dataAddr is the address of t's first element, 0 when it has none or
// is a string (strings are not pooled): what a limit.Pool knows a value's
// buffer by. Every other element type counts, those a kernel computes
// carried (carried.go) or widened (half.go) too: a value whose buffer the
// Pool did not know would be swept with the kernel's scratch while still
// live.
func dataAddr(t inference.Tensor) uintptr {
	return uintptr(unsafe.Pointer(unsafe.SliceData(t.Bytes())))
}

// seqBytes is the size of a sequence operator's output as the heap holds
// it: a sequence's tensors at limit.Held, with their records.
func seqBytes(t inference.Tensor, seq []inference.Tensor) int64 {
	b := t.ByteSize()
	if seq != nil {
		b += int64(cap(seq)) * limit.TensorRecord
	}
	for _, s := range seq {
		b += limit.Held(s)
	}
	return b
}

// runSeq runs a sequence operator, its step's kernel, reading and writing
// the slots of v as the step says.
func runSeq(n opsem.Node, step *step, v *values) error {
	args := make([]item, len(n.Inputs))
	for i, slot := range step.in {
		if slot == noSlot {
			continue
		}
		switch v.kinds[slot] {
		case sequenceValue:
			args[i] = item{seq: v.seqs[slot], isSeq: true}
		case tensorValue:
			args[i] = item{t: v.tensors[slot]}
		default:
			return fmt.Errorf("input %q has no value: %w", n.Inputs[i], inference.ErrBadModel)
		}
	}
	out, err := step.seq(n, args)
	if err != nil {
		return err
	}
	if wantsOutput(n, 0) {
		if out.isSeq {
			v.setSeq(step.out[0], out.seq)
		} else {
			v.setTensor(step.out[0], out.t)
		}
	}
	return nil
}

func runControl(ctx context.Context, n opsem.Node, in []inference.Tensor, visible map[string]inference.Tensor) ([]inference.Tensor, error) {
	switch n.OpType {
	case "If":
		cond, err := scalarBool(in[0])
		if err != nil {
			return nil, fmt.Errorf("condition: %w", err)
		}
		branch := "else_branch"
		if cond {
			branch = "then_branch"
		}
		a, ok := n.Attrs[branch]
		if !ok || a.Graph == nil {
			return nil, fmt.Errorf("no %s: %w", branch, inference.ErrBadModel)
		}
		return run(ctx, n.Run, a.Graph, nil, visible)
	case "Loop":
		return loop(ctx, n, in, visible)
	case "Scan":
		return scan(ctx, n, in, visible)
	}
	return nil, &inference.UnsupportedOpError{Node: n.Name, Op: n.OpType}
}

func scalarBool(t inference.Tensor) (bool, error) {
	if t.Len() != 1 {
		return false, fmt.Errorf("%v is not a single value: %w", t, inference.ErrShape)
	}
	switch t.DType() {
	case inference.Bool:
		d, _ := inference.Data[bool](t)
		return d[0], nil
	case inference.Int64, inference.Int32, inference.Uint8, inference.Float32:
		v, err := opsem.Int64s(t)
		if err != nil {
			return false, err
		}
		return v[0] != 0, nil
	}
	return false, fmt.Errorf("%v is not a condition: %w", t, inference.ErrType)
}

// RunObserved runs m on feeds, calling observe with every tensor a node
// computes: a graph.Runner, with which graph.InferShapes reads the shapes
// of a model's values.
func (m *Model) RunObserved(ctx context.Context, feeds map[string]inference.Tensor, observe func(name string, t inference.Tensor)) error {
	_, err := runObserved(ctx, limit.New(ctx, 0), m.g, &runState{sched: m.sched}, feeds, nil, observe)
	return err
}

// RunNode runs one node with the reference kernel of its operator, under
// the limits r (nil: the default memory budget, no deadline): what another
// backend does for a node it has no kernel for, and what constant folding
// evaluates with. Control-flow and sequence operators are not single nodes
// and fail with ErrUnsupportedOp. A panic in the kernel is returned as an
// *inference.PanicError.
func RunNode(r *limit.Run, n *graph.Node, opset int64, in []inference.Tensor) ([]inference.Tensor, error) {
	k := kernelOf(n)
	if k == nil {
		return nil, &inference.UnsupportedOpError{Node: n.Name, Op: n.OpType, Opset: opset, Detail: "not a single-node operator"}
	}
	var out []inference.Tensor
	err := guard(n, func() (err error) {
		out, err = callKernel(k, opsem.Node{Node: n, Opset: opset, Run: r}, in)
		return err
	})
	if err != nil {
		var re *inference.ResourceError
		if errors.As(err, &re) && re.Node == "" {
			re.Node = n.String()
		}
		return nil, fmt.Errorf("cpu: node %v: %w", n, err)
	}
	return out, nil
}

// IsControlFlow reports whether op runs subgraphs (If, Loop, Scan) or
// works on sequences, which RunNode does not run.
func IsControlFlow(op string) bool { return control[op] || seqKernels[op] != nil }
