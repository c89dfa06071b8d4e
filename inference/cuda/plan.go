package cuda

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// shapeClass holds the shapes of every value for the inputs of one shape
// class: all batch sizes of one set of non-batch dimensions, as functions
// of the batch size (or exact shapes for models without a batch axis),
// read off the CPU's reference kernels by graph.InferShapes.
type shapeClass struct {
	shapes map[string]graph.Shape
}

func (m *Model) shapeClass(ctx context.Context, class string, feeds map[string]inference.Tensor) (*shapeClass, error) {
	if c, ok := m.classes[class]; ok {
		return c, nil
	}
	shapes, err := graph.InferShapes(ctx, m.g, m.cpu.RunObserved, feeds)
	if err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	c := &shapeClass{shapes: shapes}
	m.classes[class] = c
	return c, nil
}

// plan is everything a Run of one input signature needs: the steps, the
// workspace layout, and the values computed on the host at plan time.
type plan struct {
	key        string
	batch      int
	steps      []step
	size       int64 // workspace bytes
	scratchOff int64
	inputs     []ioSlot
	outputs    []ioSlot
	inBytes    int64 // staging bytes
	outBytes   int64
	sites      []errorSite // the kernels that may report on the error word, by site number - 1
	wordStage  int64       // where the error word is read back in the output staging buffer
	consts     Ptr         // host-computed values, uploaded once
	constBytes int64
	hostNodes  []string
	hostOps    []string // operator types of hostNodes
	users      int
	evicted    bool
}

// capturable reports whether a run of p can be captured into a CUDA graph:
// every step runs on the device (a host step waits for the stream).
func (p *plan) capturable() bool {
	for _, s := range p.steps {
		if s.kind == stepHost {
			return false
		}
	}
	return true
}

type ioSlot struct {
	name  string
	at    loc
	stage int64 // offset in the staging buffer
	bytes int64
	dtype inference.DType
	shape []int
}

// plan returns the plan for feeds' shapes, building it on first use, and
// holds it until release.
func (m *Model) plan(ctx context.Context, feeds map[string]inference.Tensor) (*plan, error) {
	key, class, batch := m.signature(feeds)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, fmt.Errorf("cuda: run of a closed model: %w", inference.ErrBadModel)
	}
	if p, ok := m.plans[key]; ok {
		p.users++
		i := slices.Index(m.order, key)
		m.order = append(slices.Delete(m.order, i, i+1), key)
		return p, nil
	}
	c, err := m.shapeClass(ctx, class, feeds)
	if err != nil {
		return nil, err
	}
	p, err := m.build(c, feeds, batch)
	if err != nil {
		return nil, err
	}
	p.key = key
	if len(m.plans) >= maxPlans {
		old := m.order[0]
		m.order = m.order[1:]
		q := m.plans[old]
		delete(m.plans, old)
		q.evicted = true
		if q.users == 0 {
			m.freePlan(q)
		}
	}
	m.plans[key] = p
	m.order = append(m.order, key)
	p.users++
	return p, nil
}

func (m *Model) release(p *plan) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p.users--
	if p.users == 0 && p.evicted {
		m.freePlan(p)
	}
}

func (m *Model) freePlan(p *plan) {
	m.pool.dropGraphs(p)
	if p.consts != 0 {
		m.dev.Free(p.consts)
		p.consts = 0
	}
}

// planBuilder lays out one plan.
type planBuilder struct {
	m      *Model
	shapes map[string][]int
	dtypes map[string]inference.DType
	host   map[string]*inference.Tensor
	locs   map[string]loc
	sites  []errorSite // of the nodes lowered so far
	// offered holds the epilogues offered to the readers of values
	// (lowering.offer) by the value, with the plan step that applies them;
	// dropped the steps a reader took over.
	offered map[string]offeredEpilogue
	dropped map[int]bool
	// constOff places the plan's constants (host's values) in its
	// constant region, of constBytes so far.
	constOff   map[string]int64
	constBytes int64
}

// constant returns the plan constant name holding t, adding it on first use:
// a value a lowering derives from what the host knows (a float16
// initializer widened to float32).
func (b *planBuilder) constant(name string, t inference.Tensor) operand {
	if _, ok := b.constOff[name]; !ok {
		b.host[name] = &t
		b.constOff[name] = b.constBytes
		b.locs[name] = loc{reg: regConsts, off: b.constBytes}
		b.constBytes += alignUp(t.ByteSize())
	}
	o := operand{Name: name, DType: b.host[name].DType(), Shape: b.host[name].Shape(), loc: b.locs[name], host: b.host[name]}
	return o
}

// build plans a run at the feeds' shapes.
func (m *Model) build(c *shapeClass, feeds map[string]inference.Tensor, batch int) (*plan, error) {
	return m.layout(c, feeds, batch, false)
}

// layout lays out a plan; dry leaves the plan's constants on the host
// (for sizing only).
func (m *Model) layout(c *shapeClass, feeds map[string]inference.Tensor, batch int, dry bool) (*plan, error) {
	b := &planBuilder{m: m, shapes: map[string][]int{}, dtypes: map[string]inference.DType{},
		host: map[string]*inference.Tensor{}, locs: map[string]loc{},
		offered: map[string]offeredEpilogue{}, dropped: map[int]bool{}, constOff: map[string]int64{}}
	for name, s := range c.shapes {
		b.shapes[name] = s.At(batch)
		b.dtypes[name] = s.DType
	}
	for _, in := range m.g.Inputs {
		s := feeds[in.Name].Shape()
		if batch > 0 {
			s[0] = batch // feeds may be a probe of another batch size (MaxBatch)
		}
		b.shapes[in.Name] = s
		b.dtypes[in.Name] = feeds[in.Name].DType()
	}
	for name, t := range m.g.Initializers {
		t := t
		b.shapes[name], b.dtypes[name], b.host[name] = t.Shape(), t.DType(), &t
		b.locs[name] = loc{reg: regWeights, off: m.weightOff[name]}
	}
	p := &plan{batch: batch}

	// Values computed from shapes and constants only are computed here, on
	// the host, once per plan.
	onHost := make([]bool, len(m.g.Nodes))
	var consts []string
	for i, n := range m.g.Nodes {
		if !b.hostComputable(n) {
			continue
		}
		outs, err := b.evalHost(n)
		if err != nil {
			return nil, fmt.Errorf("cuda: plan node %v: %w", n, err)
		}
		onHost[i] = true
		for j, name := range n.Outputs {
			if name != "" && j < len(outs) {
				t := outs[j]
				b.host[name], b.shapes[name], b.dtypes[name] = &t, t.Shape(), t.DType()
				consts = append(consts, name)
			}
		}
	}

	// The workspace: intermediates by the memory plan, then inputs,
	// outputs and scratch.
	shapes := map[string]graph.Shape{}
	for name, s := range b.shapes {
		if b.host[name] != nil {
			continue
		}
		dims := make([]graph.Dim, len(s))
		for i, d := range s {
			dims[i] = graph.Dim{Offset: d}
		}
		shapes[name] = graph.Shape{DType: b.dtypes[name], Dims: dims}
	}
	mem := graph.PlanMemoryViews(m.g, shapes, batch) // a view's output is its input's bytes
	if missing := slices.DeleteFunc(mem.Unplanned, func(v string) bool { return b.host[v] != nil }); len(missing) > 0 {
		return nil, fmt.Errorf("cuda: no shape for %q: %w", missing, inference.ErrShape)
	}
	for name, off := range mem.Offsets {
		b.locs[name] = loc{reg: regWorkspace, off: off}
	}
	size := alignUp(mem.Size)
	for _, in := range m.g.Inputs {
		n := int64(b.dtypes[in.Name].Size()) * numElems(b.shapes[in.Name])
		b.locs[in.Name] = loc{reg: regWorkspace, off: size}
		p.inputs = append(p.inputs, ioSlot{name: in.Name, at: b.locs[in.Name], stage: p.inBytes, bytes: n})
		size += alignUp(n)
		p.inBytes += alignUp(n)
	}
	for _, name := range consts {
		b.constant(name, *b.host[name])
	}
	for _, o := range m.g.Outputs {
		if _, placed := b.locs[o.Name]; !placed {
			n := int64(inference.DType(b.dtypes[o.Name]).Size()) * numElems(b.shapes[o.Name])
			b.locs[o.Name] = loc{reg: regWorkspace, off: size}
			size += alignUp(n)
		}
	}
	// A view's output lies where its input lies: in the arena, an input
	// slot or an output slot (the view lowers to nothing).
	for y, x := range mem.Aliases {
		b.locs[y] = b.locs[x]
	}
	for _, o := range m.g.Outputs {
		s, ok := b.shapes[o.Name]
		if !ok {
			return nil, fmt.Errorf("cuda: output %q has no shape: %w", o.Name, inference.ErrShape)
		}
		n := int64(b.dtypes[o.Name].Size()) * numElems(s)
		p.outputs = append(p.outputs, ioSlot{name: o.Name, at: b.locs[o.Name], stage: p.outBytes, bytes: n,
			dtype: b.dtypes[o.Name], shape: s})
		p.outBytes += alignUp(n)
	}

	// Lower every node that runs per batch.
	var scratch int64
	for i, n := range m.g.Nodes {
		if onHost[i] {
			continue
		}
		l := &lowering{Node: opsem.Node{Node: n, Opset: m.opset}, p: b}
		for _, name := range n.Inputs {
			l.In = append(l.In, b.operand(name))
		}
		for _, name := range n.Outputs {
			l.Out = append(l.Out, b.operand(name))
		}
		err := errNoKernel
		if f, ok := lowerings[loweringKey(n)]; ok {
			err = lowerNode(l, f)
		}
		if errors.Is(err, errNoKernel) {
			why := "no device kernel"
			if e := err.Error(); e != errNoKernel.Error() {
				why = e[:len(e)-len(": "+errNoKernel.Error())]
			}
			p.hostNodes = append(p.hostNodes, fmt.Sprintf("%v: %s", n, why))
			p.hostOps = append(p.hostOps, n.OpType)
			l.steps = []step{{kind: stepHost, host: &hostStep{node: n, why: why, in: l.In, out: l.Out}}}
			l.scratch = 0
			l.sites = nil
			l.offer, l.absorbed = nil, nil
		} else if err != nil {
			return nil, err
		}
		if l.offer != nil {
			o := *l.offer
			o.step += len(p.steps)
			b.offered[l.offer.value] = o
		}
		for _, v := range l.absorbed {
			b.dropped[b.offered[v].step] = true
			delete(b.offered, v)
		}
		b.sites = append(b.sites, l.sites...)
		p.steps = append(p.steps, l.steps...)
		scratch = max(scratch, l.scratch)
	}
	if len(b.dropped) > 0 {
		kept := p.steps[:0]
		for i, s := range p.steps {
			if !b.dropped[i] {
				kept = append(kept, s)
			}
		}
		p.steps = kept
	}
	p.scratchOff = size
	p.size = errorWordSpace + size + scratch
	p.sites = b.sites
	if len(p.sites) > 0 {
		p.wordStage = p.outBytes
		p.outBytes += errorWordBytes
	}

	constBytes := b.constBytes
	p.constBytes = constBytes
	if constBytes > 0 && !dry {
		host := make([]byte, constBytes)
		for name, off := range b.constOff {
			copy(host[off:], b.host[name].Bytes())
		}
		ptr, err := m.dev.Alloc(constBytes)
		if err != nil {
			return nil, fmt.Errorf("cuda: plan constants of %d bytes: %w", constBytes, err)
		}
		if err := m.dev.CopyHtoD(ptr, host); err != nil {
			m.dev.Free(ptr)
			return nil, fmt.Errorf("cuda: plan constants: %w", err)
		}
		p.consts = ptr
	}
	return p, nil
}

func numElems(s []int) int64 {
	n := int64(1)
	for _, d := range s {
		n *= int64(d)
	}
	return n
}

func (b *planBuilder) operand(name string) operand {
	if name == "" {
		return operand{}
	}
	return operand{Name: name, DType: b.dtypes[name], Shape: slices.Clone(b.shapes[name]), loc: b.locs[name], host: b.host[name]}
}

// hostComputable reports whether n reads only shapes and host values, and
// its outputs are small: then it runs once per plan, on the host.
func (b *planBuilder) hostComputable(n *graph.Node) bool {
	if random[n.OpType] || cpu.IsControlFlow(n.OpType) {
		return false
	}
	shapeOnly := n.OpType == "Shape" || n.OpType == "Size"
	for i, in := range n.Inputs {
		if in == "" || (shapeOnly && i == 0) {
			continue
		}
		if b.host[in] == nil {
			return false
		}
	}
	for _, out := range n.Outputs {
		if out == "" {
			continue
		}
		s, ok := b.shapes[out]
		if !ok || numElems(s)*int64(max(1, b.dtypes[out].Size())) > hostOutputLimit {
			return false
		}
	}
	return true
}

func (b *planBuilder) evalHost(n *graph.Node) ([]inference.Tensor, error) {
	switch n.OpType {
	case "Shape": // reads only the shape of its input
		s := b.shapes[n.Inputs[0]]
		start, end := opsem.ShapeRange(opsem.Node{Node: n, Opset: b.m.opset}, len(s))
		dims := []int64{}
		for _, d := range s[start:max(start, end)] {
			dims = append(dims, int64(d))
		}
		t, err := inference.New([]int{len(dims)}, dims)
		return []inference.Tensor{t}, err
	case "Size":
		t, err := inference.New([]int{}, []int64{numElems(b.shapes[n.Inputs[0]])})
		return []inference.Tensor{t}, err
	}
	in := make([]inference.Tensor, len(n.Inputs))
	for i, name := range n.Inputs {
		if name != "" {
			in[i] = *b.host[name]
		}
	}
	return cpu.RunNode(nil, n, b.m.opset, in) // outputs of at most hostOutputLimit bytes
}
