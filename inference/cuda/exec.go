package cuda

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// Model is a graph compiled for a CUDA device. Run is safe for concurrent
// use: the weights are shared, each Run takes its own workspace.
type Model struct {
	b     *Backend
	ord   int // dev's index in b's devices
	dev   Device
	cpu   *cpu.Model
	g     *graph.Graph
	opset int64
	// fallback, when not empty, says why the whole model runs on the CPU
	// backend instead (control flow, data-dependent shapes).
	fallback string
	// batched is true when every input has a dynamic first dimension: plans
	// then share shapes computed symbolically in the batch size.
	batched bool
	// precision is every GEMM's (Gemm.Precision): FP32, TF32 or FP16.
	precision inference.Precision
	// readers counts each value's reads: by node inputs, and one for a
	// graph output. A value read once may hand its producer's pointwise
	// epilogue to its reader (lower_conv.go's deferred epilogues).
	readers map[string]int
	// readBy is each value's last reader node: with a readers count of 1,
	// its only reader.
	readBy map[string]*graph.Node

	weights     Ptr
	weightOff   map[string]int64
	weightBytes int64
	// ensembles are the tree ensemble nodes laid out for the device
	// (treelayout.go), uploaded after the initializers.
	ensembles map[*graph.Node]*deviceEnsemble

	mu      sync.Mutex
	classes map[string]*shapeClass
	plans   map[string]*plan
	order   []string // plan keys, least recently used first
	pool    pool

	runs     atomic.Int64
	hostRuns atomic.Int64
	closed   bool
}

// maxPlans bounds the plans a model keeps (one per distinct input shape).
const maxPlans = 128

// hostOutputLimit is the largest value computed on the host at plan time
// (shape arithmetic); larger ones are computed on the device.
const hostOutputLimit = 64 << 10

// random operators are never evaluated at plan time.
var random = map[string]bool{
	"RandomNormal": true, "RandomUniform": true, "RandomNormalLike": true, "RandomUniformLike": true,
	"Bernoulli": true, "Multinomial": true,
}

func newModel(b *Backend, ord int, dev Device, g *graph.Graph, precision inference.Precision, stringsWhy string) (*Model, error) {
	m := &Model{b: b, ord: ord, dev: dev, precision: precision, cpu: cpu.NewModel(g), g: g, opset: g.Opset(), batched: g.Batched(),
		classes: map[string]*shapeClass{}, plans: map[string]*plan{}}
	m.pool.dev = dev
	m.pool.cond = sync.NewCond(&m.pool.mu)
	for _, n := range g.Nodes {
		if cpu.IsControlFlow(n.OpType) {
			m.fallback = fmt.Sprintf("node %v runs subgraphs or sequences", n)
			break
		}
	}
	if v := stringValue(g); m.fallback == "" && v != "" {
		m.fallback = fmt.Sprintf("value %q holds strings, which the device does not", v)
		if stringsWhy != "" {
			m.fallback += ", and they are not all at the model's edges: " + stringsWhy
		}
	}
	if m.fallback == "" {
		types := opsem.ValueTypes(g, nil)
		for _, name := range slices.Sorted(maps.Keys(types)) {
			if types[name] == inference.String {
				m.fallback = fmt.Sprintf("value %q holds strings, which the device does not", name)
				break
			}
		}
	}
	if m.fallback == "" {
		dd := graph.DataDependentShapes(g)
		for _, n := range g.Nodes {
			if slices.ContainsFunc(n.Outputs, func(o string) bool { return dd[o] }) {
				m.fallback = fmt.Sprintf("node %v has an output whose shape depends on the input data", n)
				break
			}
		}
	}
	m.readers, m.readBy = map[string]int{}, map[string]*graph.Node{}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			m.readers[in]++
			m.readBy[in] = n
		}
	}
	for _, o := range g.Outputs {
		m.readers[o.Name]++
	}
	m.ensembles = layoutEnsembles(g)
	if err := m.uploadWeights(); err != nil {
		return nil, err
	}
	return m, nil
}

// stringValue returns the first value of g, in the order the graph
// defines them, whose elements are strings (a classical model's
// categories and labels), or "": a string element is a Go string, which
// device memory cannot hold, so such a model runs on the CPU backend.
func stringValue(g *graph.Graph) string {
	types := map[string]inference.DType{}
	for _, v := range slices.Concat(g.Inputs, g.Overridable) {
		if types[v.Name] = v.DType; v.DType == inference.String {
			return v.Name
		}
	}
	for _, name := range slices.Sorted(maps.Keys(g.Initializers)) {
		if types[name] = g.Initializers[name].DType(); types[name] == inference.String {
			return name
		}
	}
	for _, n := range g.Nodes {
		in := make([]inference.DType, len(n.Inputs))
		for i, name := range n.Inputs {
			in[i] = types[name]
		}
		out := opsem.OutputDTypes(opsem.Node{Node: n, Opset: g.OpsetOf(n)}, in)
		for i, name := range n.Outputs {
			if i < len(out) && name != "" {
				if types[name] = out[i]; out[i] == inference.String {
					return name
				}
			}
		}
	}
	return ""
}

// uploadWeights copies every initializer, and every tree ensemble laid
// out for the device, to the device in one allocation and one copy: the
// weights live there for the model's lifetime.
func (m *Model) uploadWeights() error {
	names := slices.Sorted(maps.Keys(m.g.Initializers))
	m.weightOff = make(map[string]int64, len(names))
	var size int64
	for _, name := range names {
		m.weightOff[name] = size
		size += alignUp(m.g.Initializers[name].ByteSize())
	}
	var ensembles []*deviceEnsemble // in the graph's order
	for _, n := range m.g.Nodes {
		if d := m.ensembles[n]; d != nil && d.data != nil {
			d.off = size
			size += alignUp(int64(len(d.data)))
			ensembles = append(ensembles, d)
		}
	}
	if size == 0 {
		return nil
	}
	host := make([]byte, size)
	for _, name := range names {
		t := m.g.Initializers[name]
		copy(host[m.weightOff[name]:], t.Bytes())
	}
	for _, d := range ensembles {
		copy(host[d.off:], d.data)
		d.data = nil
	}
	p, err := m.dev.Alloc(size)
	if err != nil {
		return fmt.Errorf("cuda: upload %d bytes of weights: %w", size, err)
	}
	if err := m.dev.CopyHtoD(p, host); err != nil {
		m.dev.Free(p)
		return fmt.Errorf("cuda: upload %d bytes of weights: %w", size, err)
	}
	m.weights, m.weightBytes = p, size
	return nil
}

func alignUp(n int64) int64 { return (n + graph.Align - 1) / graph.Align * graph.Align }

// Inputs describes the graph inputs.
func (m *Model) Inputs() []inference.TensorInfo { return m.cpu.Inputs() }

// Outputs describes the graph outputs.
func (m *Model) Outputs() []inference.TensorInfo { return m.cpu.Outputs() }

// ByteSize is the device memory of the weights.
func (m *Model) ByteSize() int64 { return m.weightBytes }

// Graph returns the compiled graph.
func (m *Model) Graph() *graph.Graph { return m.g }

// Fallback says why the model runs on the CPU backend, or "" when it runs
// on the device.
func (m *Model) Fallback() string { return m.fallback }

// Stats describes what a model holds and did.
type Stats struct {
	WeightBytes int64 // device bytes of the weights, uploaded once
	Runs        int64 // batches run
	CPURuns     int64 // batches run on the CPU backend (Fallback)
	Plans       int   // input shapes planned
	Workspaces  int   // workspaces allocated now
	// HostNodes names the nodes that run on the host in some plan, with
	// the reason: "conv1 (Conv): rank 7 > 6".
	HostNodes []string
}

// Stats returns the model's counters.
func (m *Model) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := Stats{WeightBytes: m.weightBytes, Runs: m.runs.Load(), CPURuns: m.hostRuns.Load(), Plans: len(m.plans)}
	seen := map[string]bool{}
	for _, p := range m.plans {
		for _, h := range p.hostNodes {
			if !seen[h] {
				seen[h] = true
				s.HostNodes = append(s.HostNodes, h)
			}
		}
	}
	slices.Sort(s.HostNodes)
	m.pool.mu.Lock()
	s.Workspaces = m.pool.count
	m.pool.mu.Unlock()
	return s
}

// HostNodes returns the operator types of the nodes that ran on the host
// in some plan (sorted, with repeats), or every node's type when the whole
// model runs on the CPU backend (Fallback).
func (m *Model) HostNodes() []string {
	var ops []string
	if m.fallback != "" {
		for _, n := range m.g.Nodes {
			ops = append(ops, n.OpType)
		}
	} else {
		m.mu.Lock()
		for _, p := range m.plans {
			ops = append(ops, p.hostOps...)
		}
		m.mu.Unlock()
	}
	slices.Sort(ops)
	return ops
}

// Close frees the workspaces, the plans' constants and the weights.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	var errs []error
	errs = append(errs, m.pool.close())
	for _, p := range m.plans {
		if p.consts != 0 {
			errs = append(errs, m.dev.Free(p.consts))
		}
	}
	m.plans = nil
	if m.weights != 0 {
		errs = append(errs, m.dev.Free(m.weights))
	}
	return errors.Join(errs...)
}

// Run executes one batch.
func (m *Model) Run(ctx context.Context, feeds map[string]inference.Tensor) (map[string]inference.Tensor, error) {
	if err := m.checkFeeds(feeds); err != nil {
		return nil, err
	}
	m.runs.Add(1)
	if m.fallback != "" {
		m.hostRuns.Add(1)
		return m.cpu.Run(ctx, feeds)
	}
	if err := m.b.Failed(); err != nil {
		return nil, err
	}
	p, err := m.plan(ctx, feeds)
	if err != nil {
		return nil, m.b.fail(err)
	}
	defer m.release(p)
	ws, err := m.pool.get(p.size, p.inBytes, p.outBytes)
	if err != nil {
		return nil, m.b.fail(fmt.Errorf("cuda: batch of %d: workspace of %d bytes: %w", p.batch, p.size, err))
	}
	out, err := m.execute(ctx, p, ws, feeds)
	m.pool.put(ws)
	return out, m.b.fail(err)
}

func (m *Model) checkFeeds(feeds map[string]inference.Tensor) error { return checkFeeds(m.g, feeds) }

// checkFeeds checks feeds against g's inputs: each fed, of its type, rank
// and static dimensions; no initializer overridden.
func checkFeeds(g *graph.Graph, feeds map[string]inference.Tensor) error {
	for _, in := range g.Inputs {
		t, ok := feeds[in.Name]
		if !ok {
			return fmt.Errorf("cuda: graph input %q is not fed: %w", in.Name, inference.ErrMissingInput)
		}
		if in.DType != 0 && t.DType() != in.DType {
			return fmt.Errorf("cuda: graph input %q is %v, want %v: %w", in.Name, t, in.DType, inference.ErrType)
		}
		if in.Shape != nil && t.Rank() != len(in.Shape) {
			return fmt.Errorf("cuda: graph input %q is %v, want rank %d: %w", in.Name, t, len(in.Shape), inference.ErrShape)
		}
		for k, d := range in.Shape {
			if d != inference.Dynamic && t.Shape()[k] != d {
				return fmt.Errorf("cuda: graph input %q is %v, want dimension %d of %d: %w", in.Name, t, k, d, inference.ErrShape)
			}
		}
	}
	for _, in := range g.Overridable {
		if _, ok := feeds[in.Name]; ok {
			return &inference.UnsupportedOpError{Op: "feed", Detail: fmt.Sprintf("input %q overrides an initializer; the GPU executor runs with its default only", in.Name)}
		}
	}
	return nil
}

// execute runs plan p in workspace ws. When p has kernels that may
// report on the error word (errword.go), the word is read back with the
// outputs, and a failure it records is the run's error.
func (m *Model) execute(ctx context.Context, p *plan, ws *workspace, feeds map[string]inference.Tensor) (map[string]inference.Tensor, error) {
	base := ws.ptr + errorWordSpace
	f := frame{weights: m.weights, consts: p.consts, ws: base, scratch: base + Ptr(p.scratchOff), word: ws.ptr}
	var word []byte // where the error word is read back
	if len(p.sites) > 0 {
		word = ws.hostOut[p.wordStage : p.wordStage+errorWordBytes]
	}
	if len(p.sites) > 0 && !ws.wordClear {
		if err := m.dev.CopyHtoD(f.word, zeroWord[:]); err != nil {
			return nil, fmt.Errorf("cuda: clear the error word: %w", err)
		}
		ws.wordClear = true
	}
	for _, in := range p.inputs {
		if in.bytes > 0 {
			copy(ws.hostIn[in.stage:in.stage+in.bytes], feeds[in.name].Bytes())
		}
	}
	// The run's work, queued call by call, or captured into the graph that
	// later runs replay (graph.go).
	eager := func() error {
		for _, in := range p.inputs {
			if in.bytes == 0 {
				continue
			}
			if err := m.dev.CopyHtoDAsync(f.addr(in.at), ws.hostIn[in.stage:in.stage+in.bytes], ws.stream); err != nil {
				return fmt.Errorf("cuda: copy input %q to the device: %w", in.name, err)
			}
		}
		run := limit.New(ctx, 0) // for the nodes that run on the host
		for i := range p.steps {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := m.guardedDo(run, &p.steps[i], f, ws); err != nil {
				return err
			}
		}
		for _, out := range p.outputs {
			if out.bytes == 0 {
				continue
			}
			if err := m.dev.CopyDtoHAsync(ws.hostOut[out.stage:out.stage+out.bytes], f.addr(out.at), ws.stream); err != nil {
				return fmt.Errorf("cuda: copy output %q from the device: %w", out.name, err)
			}
		}
		if len(p.sites) > 0 {
			if err := m.dev.CopyDtoHAsync(word, f.word, ws.stream); err != nil {
				return fmt.Errorf("cuda: copy the error word from the device: %w", err)
			}
		}
		return nil
	}
	if err := m.queue(p, ws, eager); err != nil {
		return nil, m.stopped(p, ws, f, err)
	}
	if err := m.dev.Sync(ws.stream); err != nil {
		ws.wordClear = false
		return nil, fmt.Errorf("cuda: batch of %d: %w", p.batch, err)
	}
	if len(p.sites) > 0 {
		if err := p.deviceError(word); err != nil {
			ws.wordClear = false
			return nil, err
		}
	}
	res := make(map[string]inference.Tensor, len(p.outputs))
	for _, out := range p.outputs {
		t, err := inference.Zeros(out.dtype, out.shape)
		if err != nil {
			return nil, fmt.Errorf("cuda: output %q: %w", out.name, err)
		}
		copy(t.Bytes(), ws.hostOut[out.stage:out.stage+out.bytes])
		res[out.name] = t
	}
	return res, nil
}

// stopped ends a run that stops early with err: it waits for the queued
// work, and returns the failure the error word records instead of err when
// there is one (it came first: the host acted on what the failing kernel
// left). The word is left for the next run to clear.
func (m *Model) stopped(p *plan, ws *workspace, f frame, err error) error {
	serr := m.dev.Sync(ws.stream)
	if len(p.sites) == 0 {
		return err
	}
	ws.wordClear = false
	if serr != nil {
		return err
	}
	word := ws.hostOut[p.wordStage : p.wordStage+errorWordBytes]
	if m.dev.CopyDtoH(word, f.word) == nil {
		if derr := p.deviceError(word); derr != nil {
			return derr
		}
	}
	return err
}

// frame holds the region bases of one run.
type frame struct{ weights, consts, ws, scratch, word Ptr }

func (f frame) addr(l loc) Ptr {
	switch l.reg {
	case regWeights:
		return f.weights + Ptr(l.off)
	case regConsts:
		return f.consts + Ptr(l.off)
	case regScratch:
		return f.scratch + Ptr(l.off)
	case regErrorWord:
		return f.word
	}
	return f.ws + Ptr(l.off)
}

// guardedDo is do, returning a panic in the host code of the step (a
// launch's arguments, a host node) as an *inference.PanicError.
func (m *Model) guardedDo(run *limit.Run, s *step, f frame, ws *workspace) (err error) {
	defer func() {
		if v := recover(); v != nil {
			what := "launch of " + s.kernel
			if s.host != nil {
				what = fmt.Sprintf("node %v on the host", s.host.node)
			}
			err = inference.Recovered(what, v)
		}
	}()
	return m.do(run, s, f, ws)
}

func (m *Model) do(run *limit.Run, s *step, f frame, ws *workspace) error {
	switch s.kind {
	case stepLaunch:
		ws.args = ws.args[:0] // devices copy the arguments at Launch
		for _, a := range s.args {
			if a.ptr {
				ws.args = append(ws.args, uint64(f.addr(a.at)))
			} else {
				ws.args = append(ws.args, a.lit)
			}
		}
		if err := m.dev.Launch(s.fn, s.grid, s.block, ws.stream, ws.args); err != nil {
			return fmt.Errorf("cuda: launch %s: %w", s.kernel, err)
		}
	case stepGemm:
		g := s.gemm.Gemm
		g.Precision = m.precision
		g.A = f.addr(s.gemm.OpA.loc) + Ptr(g.InBytes()*s.gemm.AOff)
		g.B = f.addr(s.gemm.OpB.loc) + Ptr(g.InBytes()*s.gemm.BOff)
		g.C = f.addr(s.gemm.OpC.loc) + Ptr(g.OutBytes()*s.gemm.COff)
		if err := m.dev.Gemm(ws.stream, g); err != nil {
			return fmt.Errorf("cuda: gemm %dx%dx%d: %w", g.M, g.N, g.K, err)
		}
	case stepCopy:
		if err := m.dev.CopyDtoDAsync(f.addr(s.dst), f.addr(s.src), s.bytes, ws.stream); err != nil {
			return fmt.Errorf("cuda: device copy: %w", err)
		}
	case stepHost:
		return m.runHost(run, s.host, f, ws)
	}
	return nil
}

// runHost runs a node on the host: its device inputs come down, the CPU
// kernel runs, its outputs go up.
func (m *Model) runHost(run *limit.Run, h *hostStep, f frame, ws *workspace) error {
	if err := m.dev.Sync(ws.stream); err != nil {
		return fmt.Errorf("cuda: node %v: %w", h.node, err)
	}
	in := make([]inference.Tensor, len(h.in))
	for i, o := range h.in {
		if !o.Present() {
			continue
		}
		if t, ok := o.Host(); ok {
			in[i] = t
			continue
		}
		t, err := inference.Zeros(o.DType, o.Shape)
		if err != nil {
			return fmt.Errorf("cuda: node %v: input %q: %w", h.node, o.Name, err)
		}
		if o.Bytes() > 0 {
			if err := m.dev.CopyDtoH(t.Bytes(), f.addr(o.loc)); err != nil {
				return fmt.Errorf("cuda: node %v: input %q: %w", h.node, o.Name, err)
			}
		}
		in[i] = t
	}
	mark := run.InUse()
	defer run.Reset(mark) // the outputs are copied to the device
	out, err := cpu.RunNode(run, h.node, m.opset, in)
	if err != nil {
		return err
	}
	for i, o := range h.out {
		if !o.Present() {
			continue
		}
		if i >= len(out) {
			return fmt.Errorf("cuda: node %v: output %q not computed: %w", h.node, o.Name, inference.ErrBadModel)
		}
		if !slices.Equal(out[i].Shape(), o.Shape) || out[i].DType() != o.DType {
			return fmt.Errorf("cuda: node %v: output %q is %v, planned %v%v: %w", h.node, o.Name, out[i], o.DType, o.Shape, inference.ErrShape)
		}
		if o.Bytes() > 0 {
			if err := m.dev.CopyHtoD(f.addr(o.loc), out[i].Bytes()); err != nil {
				return fmt.Errorf("cuda: node %v: output %q: %w", h.node, o.Name, err)
			}
		}
	}
	return nil
}

// signature is the key of a feed's shapes.
func (m *Model) signature(feeds map[string]inference.Tensor) (key, class string, batch int) {
	var b, c strings.Builder
	batch = -1
	for _, in := range m.g.Inputs {
		s := feeds[in.Name].Shape()
		fmt.Fprintf(&b, "%v;", s)
		if m.batched {
			if batch < 0 {
				batch = s[0]
			} else if s[0] != batch {
				batch = -2
			}
			fmt.Fprintf(&c, "%v;", s[1:])
		} else {
			fmt.Fprintf(&c, "%v;", s)
		}
	}
	if !m.batched || batch < 0 {
		return b.String(), "exact:" + b.String(), 0
	}
	return b.String(), c.String(), batch
}
