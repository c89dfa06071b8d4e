package cpu

import (
	"fmt"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// Weights prepared at compile time: the constant operand of each Conv,
// ConvTranspose, MatMul and Gemm, and the weights W and R of RNN and LSTM,
// packed once in the layout the SGEMM micro-kernel reads
// (nnPacked), so that a run packs only the activations. The packed copy
// sits beside the initializer, which constant folding and other readers
// keep using; Model.ByteSize counts both. Operators of other domains
// prepare what their attributes describe (a tree ensemble's layout:
// registerPrepare), which also checks those attributes: a model they do
// not describe fails to compile.

// nnPackedSet is a weight packed as one matrix per group (a Conv's W:
// group g's outChans/group × (chans/group · ∏kernel) block, the A operand
// of its im2col product) or per direction (rnPacked).
type nnPackedSet []*nnPacked

// rnPacked are the weights of an RNN, GRU or LSTM packed per direction:
// W, R and, for a GRU without linear_before_reset, R's h block.
type rnPacked struct{ w, r, rh nnPackedSet }

// of returns set member i when it is the packing of x (nnPacked.of).
func (s nnPackedSet) of(i int, x []float32) *nnPacked {
	if i >= len(s) {
		return nil
	}
	return s[i].of(x)
}

// A preparer makes, from a node's attributes, what its kernel reads at
// every run (opsem.Node.Prepared), or fails with an error that says which
// attribute is wrong. What it returns may implement preparedBytes.
type preparer func(n opsem.Node) (any, error)

// preparers maps operators to their preparers, by opKey; filled by init
// functions of the op files, read-only afterwards.
var preparers = map[string]preparer{}

// registerPrepare adds the preparer of the operator whose opKey is key.
func registerPrepare(key string, p preparer) {
	if _, dup := preparers[key]; dup {
		panic("cpu: preparer registered twice: " + key)
	}
	preparers[key] = p
}

// preparedBytes is implemented by what a preparer returns: the bytes it
// holds.
type preparedBytes interface{ preparedBytes() int64 }

// registerAttrs registers read, which reads and checks a node's attributes
// (opsem's LinearClassifierOf, …), as the preparer of op (an opKey).
func registerAttrs[P any](op string, read func(opsem.Node) (P, error)) {
	registerPrepare(op, func(n opsem.Node) (any, error) { return read(n) })
}

// readAttrs returns what read gives for n: its prepared value when
// prepare kept one, else read's result for n, kept in the node's memo while
// the inputs' types and shapes stay those of in (RunNode, subgraphs).
func readAttrs[P any](n opsem.Node, in []inference.Tensor, read func(opsem.Node) (P, error)) (P, error) {
	if p, ok := n.Prepared.(P); ok {
		return p, nil
	}
	return opsem.Plan(n, in, func() (P, error) { return read(n) })
}

// prepare packs the weights of g's Conv (but the depthwise ones, which do
// not run through SGEMM), ConvTranspose, MatMul, Gemm, RNN and LSTM nodes
// whose weight is a constant initializer (not one a run may override),
// gives every Conv a cvPrepared, and runs the preparers of the nodes that
// have one, failing with the first error, which names the node; those of
// the graphs nested in g's nodes are checked (checkPrepared), their
// kernels preparing at run time.
func prepare(g *graph.Graph) (map[*graph.Node]any, error) {
	prepared := map[*graph.Node]any{}
	kern := nnBestKernel
	for _, n := range g.Nodes {
		if p := preparers[opKey(n)]; p != nil {
			v, err := p(opsem.Node{Node: n, Opset: g.OpsetOf(n)})
			if err != nil {
				return nil, fmt.Errorf("cpu: node %v: %w", n, err)
			}
			prepared[n] = v
			continue
		}
		for _, sub := range n.Subgraphs() {
			if err := checkPrepared(sub); err != nil {
				return nil, err
			}
		}
		if n.Domain != "" {
			continue
		}
		if n.OpType == "LSTM" || n.OpType == "GRU" || n.OpType == "RNN" {
			var p rnPacked
			// W and R are [dirs, gates·hidden, inputs], the B operands of
			// X·Wᵀ and H·Rᵀ. A GRU without linear_before_reset multiplies
			// r⊙H by Rh, R's last hidden rows, on its own: rh packs those.
			for i, set := range []*nnPackedSet{&p.w, &p.r} {
				if w, ws, ok := constantFloats(g, n.Input(1+i)); ok && len(ws) == 3 {
					dirs, gh, inputs := ws[0], ws[1], ws[2]
					*set = make(nnPackedSet, dirs)
					for d := range *set {
						(*set)[d] = nnPackWholeB(kern, true, inputs, gh, w[d*gh*inputs:], inputs)
					}
					if i == 1 && n.OpType == "GRU" && gh%3 == 0 && n.Int("linear_before_reset", 0) == 0 {
						hidden := gh / 3
						p.rh = make(nnPackedSet, dirs)
						for d := range p.rh {
							p.rh[d] = nnPackWholeB(kern, true, hidden, hidden, w[(d*gh+2*hidden)*hidden:], hidden)
						}
					}
				}
			}
			if p.w != nil || p.r != nil {
				prepared[n] = p
			}
			continue
		}
		if n.OpType == "Conv" { // every Conv keeps its geometry (cvPrepared)
			prepared[n] = &cvPrepared{packs: convPacks(g, n, kern)}
			continue
		}
		w, ws, ok := constantFloats(g, n.Input(1))
		if !ok {
			continue
		}
		switch n.OpType {
		case "ConvTranspose":
			if packs := convTransposePacks(n, w, ws, kern); packs != nil {
				prepared[n] = packs
			}
		case "MatMul":
			if len(ws) == 2 {
				prepared[n] = nnPackWholeB(kern, false, ws[0], ws[1], w, ws[1])
			}
		case "Gemm":
			if len(ws) != 2 {
				continue
			}
			k, cols := ws[0], ws[1]
			trans := n.Int("transB", 0) != 0
			if trans {
				k, cols = cols, k
			}
			prepared[n] = nnPackWholeB(kern, trans, k, cols, w, ws[1])
		}
	}
	return prepared, nil
}

// convTransposePacks packs ConvTranspose node n's W ([chans][mg][kernel…])
// per group: the A operand of each group's product is its block of W
// transposed, (mg·∏kernel) × (chans/group).
func convTransposePacks(n *graph.Node, w []float32, ws []int, kern nnKernel) nnPackedSet {
	group := int(n.Int("group", 1))
	if len(ws) < 3 || group < 1 || ws[0]%group != 0 {
		return nil
	}
	return packGroups(kern, true, group, opsem.Count(ws[1:]), ws[0]/group, w)
}

// checkPrepared runs the preparers of the nodes of g and of the graphs
// nested in it, for their errors.
func checkPrepared(g *graph.Graph) error {
	for _, n := range g.Nodes {
		if p := preparers[opKey(n)]; p != nil {
			if _, err := p(opsem.Node{Node: n, Opset: g.OpsetOf(n)}); err != nil {
				return fmt.Errorf("cpu: node %v: %w", n, err)
			}
		}
		for _, sub := range n.Subgraphs() {
			if err := checkPrepared(sub); err != nil {
				return err
			}
		}
	}
	return nil
}

// convPacks packs Conv node n's W per group, when it is a constant
// initializer and the convolution runs through SGEMM (not depthwise).
func convPacks(g *graph.Graph, n *graph.Node, kern nnKernel) nnPackedSet {
	w, ws, ok := constantFloats(g, n.Input(1))
	group := int(n.Int("group", 1))
	if !ok || len(ws) < 3 || group < 1 || ws[0]%group != 0 || cvDepthwise(group, ws[1]*group, ws[0], ws[2:]) {
		return nil
	}
	return packGroups(kern, false, group, ws[0]/group, opsem.Count(ws[1:]), w)
}

// packGroups packs, for each of group groups, op(A) of m×k from W's
// consecutive blocks of m·k floats: stored m×k, or with transA k×m.
func packGroups(kern nnKernel, transA bool, group, m, k int, w []float32) nnPackedSet {
	lda := k
	if transA {
		lda = m
	}
	packs := make(nnPackedSet, group)
	for grp := range packs {
		packs[grp] = nnPackWholeA(kern, transA, m, k, w[grp*m*k:], lda)
	}
	return packs
}

// constantFloats returns the float32 initializer name, when it is one a run
// cannot override and has elements.
func constantFloats(g *graph.Graph, name string) ([]float32, []int, bool) {
	t, ok := g.Initializers[name]
	if !ok || name == "" || t.DType() != inference.Float32 || t.Len() == 0 ||
		slices.ContainsFunc(g.Overridable, func(v graph.Value) bool { return v.Name == name }) {
		return nil, nil, false
	}
	return dataOf[float32](t), t.Shape(), true
}

// preparedSize is the bytes the packed weights take.
func preparedSize(prepared map[*graph.Node]any) int64 {
	var n int64
	add := func(p *nnPacked) {
		for _, b := range p.blocks {
			n += int64(len(b)) * 4
		}
	}
	for _, v := range prepared {
		switch v := v.(type) {
		case *nnPacked:
			add(v)
		case *cvPrepared:
			for _, p := range v.packs {
				add(p)
			}
		case nnPackedSet: // a ConvTranspose's W
			for _, p := range v {
				add(p)
			}
		case rnPacked:
			for _, set := range []nnPackedSet{v.w, v.r, v.rh} {
				for _, p := range set {
					add(p)
				}
			}
		case preparedBytes:
			n += v.preparedBytes()
		}
	}
	return n
}

// packedFor returns the packing of the operand whose data is x, when
// prepared holds it (nnPacked.of).
func packedFor(prepared any, x []float32) *nnPacked {
	p, _ := prepared.(*nnPacked)
	return p.of(x)
}
