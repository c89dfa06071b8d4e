package passes

import (
	"fmt"
	"math"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// StoreInFloat16 rewrites a graph for a backend's FP16 precision mode
// (inference.FP16): the float32 values that the nodes native accepts read
// and write become float16, so that a backend that keeps float16 in
// memory (inference/cuda) stores them in two bytes and runs those nodes'
// float16 kernels. It runs last, after the rewrites that fuse nodes, on
// the nodes of the model's graph (not those nested in If, Loop or Scan,
// which stay float32):
//   - a node is converted when native accepts it, it reads or writes
//     float32, it runs no graph and is not a Cast or CastLike (whose
//     output type is their target), and with every float32 input read as
//     float16 the ONNX output-type rules (opsem.OutputDTypes) make each of
//     its float32 outputs float16 and leave its other outputs' types
//     alone (LayerNormalization's float32 Mean and InvStdDev keep it
//     float32);
//   - a converted node reads every float32 input as float16: the float16
//     output of a converted producer; an initializer that no feed may
//     override rounded to the nearest float16 (in place when only
//     converted nodes read it, else as a copy); anything else (a graph
//     input, an overridable initializer, the output of a node that stays
//     float32) through one Cast to float16 that all its converted readers
//     share;
//   - a converted node's float32 output that a float32 node, a subgraph or
//     the graph's outputs read is written in float16 under a new name and
//     cast back to float32 under its own: the graph's outputs keep their
//     names and declared types. A Shape or Size node, which reads only its
//     input's shape, reads the float16 value itself;
//   - a Cast to float32 from bool or an integer type whose output only
//     converted nodes read casts to float16 instead (the same values:
//     an integer beyond float16's range is ±Inf either way).
//
// Each converted node computes what it computes from float16 operands and
// rounds its outputs once (the meaning ComputeFloat16InFloat32 gives a
// float16 model, node by node), so the rewritten graph runs on any
// backend: the CPU's run of it is the reference for a backend's FP16
// mode. Computed values beyond float16's range (±65504) become ±Inf, and
// those below 2^-14 in magnitude lose precision: the mode is for models
// whose values stay inside it. Constants beyond it are held at ±65504
// (saturateHalf), as ONNX's float16 converters hold them: exporters write
// float32's lowest value for "minus infinity" in attention masks.
func StoreInFloat16(native func(*graph.Node) bool) Pass {
	return Pass{Name: "StoreInFloat16", Run: func(g *graph.Graph) (bool, error) {
		r := &halfRewrite{opset: g.Opset(), types: map[*graph.Graph]map[string]inference.DType{}}
		s := &store16{g: g, x: newIndex(g), types: r.inferTypes(g, nil, nil),
			converted: map[*graph.Node]bool{}, half: map[string]string{}}
		for _, n := range g.Nodes {
			if native(n) && s.convertible(n) {
				s.converted[n] = true
			}
		}
		if len(s.converted) == 0 {
			return false, nil
		}
		return true, s.rewrite()
	}}
}

// shapeOnly reports whether n reads nothing of its input but its shape.
func shapeOnly(n *graph.Node) bool {
	return n.Domain == "" && (n.OpType == "Shape" || n.OpType == "Size")
}

// store16 is the state of one StoreInFloat16 rewrite.
type store16 struct {
	g         *graph.Graph
	x         *index
	types     map[string]inference.DType // of g's values, before the rewrite
	converted map[*graph.Node]bool
	// half names the float16 form of each float32 value a converted node
	// reads or writes.
	half  map[string]string
	added []*graph.Node // the Casts, which Optimize sorts into place
}

// convertible reports whether n can compute in float16 what it computes
// in float32 (StoreInFloat16's first rule).
func (s *store16) convertible(n *graph.Node) bool {
	if len(n.Subgraphs()) > 0 || n.Domain == "" && (n.OpType == "Cast" || n.OpType == "CastLike") {
		return false
	}
	in := make([]inference.DType, len(n.Inputs))
	float := false
	for i, name := range n.Inputs {
		if name == "" {
			continue
		}
		in[i] = s.types[name]
		if in[i] == inference.Float32 {
			in[i], float = inference.Float16, true
		}
	}
	out := opsem.OutputDTypes(opsem.Node{Node: n, Opset: s.g.Opset()}, in)
	for i, name := range n.Outputs {
		if name == "" {
			continue
		}
		switch was := s.types[name]; {
		case i >= len(out) || was == 0:
			return false // a type the rules cannot tell
		case was == inference.Float32:
			if out[i] != inference.Float16 {
				return false
			}
			float = true
		case out[i] != was:
			return false
		}
	}
	return float
}

// rewrite converts the nodes in s.converted: their float32 outputs first,
// so that a reader finds its producer's float16 name, then their inputs.
func (s *store16) rewrite() error {
	for _, n := range s.g.Nodes {
		if !s.converted[n] {
			continue
		}
		for i, name := range n.Outputs {
			if name == "" || s.types[name] != inference.Float32 {
				continue
			}
			h := name
			if s.readInFloat32(name) {
				h = s.x.fresh(name + "_float16")
				n.Outputs[i] = h
				s.cast(h, name, onnxFloat)
			}
			s.half[name] = h
		}
	}
	for _, n := range s.g.Nodes {
		if shapeOnly(n) && !s.converted[n] {
			for i, name := range n.Inputs {
				if h, ok := s.half[name]; ok {
					n.Inputs[i] = h
				}
			}
		}
		if s.castsExactly(n) {
			n.Attrs["to"] = graph.Attr{Type: graph.AttrInt, Int: onnxFloat16}
			s.half[n.Outputs[0]] = n.Outputs[0]
		}
	}
	for _, n := range s.g.Nodes {
		if !s.converted[n] {
			continue
		}
		for i, name := range n.Inputs {
			if name == "" || s.types[name] != inference.Float32 {
				continue
			}
			h, err := s.float16(name)
			if err != nil {
				return fmt.Errorf("node %v: input %q: %w", n, name, err)
			}
			n.Inputs[i] = h
		}
	}
	s.g.Nodes = append(s.g.Nodes, s.added...)
	return nil
}

// readInFloat32 reports whether something other than a converted node
// or a shapeOnly one reads value: a node that stays float32, a subgraph or
// the graph's outputs.
func (s *store16) readInFloat32(value string) bool {
	if s.x.pinned[value] {
		return true
	}
	for _, r := range s.x.readers[value] {
		if !s.converted[r] && !shapeOnly(r) {
			return true
		}
	}
	return false
}

// castsExactly reports whether n is a Cast to float32 from bool or an
// integer type whose output converted nodes alone read: it may cast to
// float16 instead (StoreInFloat16's last rule).
func (s *store16) castsExactly(n *graph.Node) bool {
	if n.Domain != "" || n.OpType != "Cast" || len(n.Inputs) != 1 || len(n.Outputs) != 1 ||
		n.Attrs["to"].Int != onnxFloat || s.x.pinned[n.Outputs[0]] || len(s.x.readers[n.Outputs[0]]) == 0 {
		return false
	}
	switch s.types[n.Inputs[0]] {
	case inference.Bool, inference.Uint8, inference.Int32, inference.Int64:
	default:
		return false
	}
	for _, r := range s.x.readers[n.Outputs[0]] {
		if !s.converted[r] {
			return false
		}
	}
	return true
}

// float16 returns the name of value's float16 form, making it on first use
// (StoreInFloat16's second rule).
func (s *store16) float16(value string) (string, error) {
	if h, ok := s.half[value]; ok {
		return h, nil
	}
	h := value
	if t, ok := s.x.constant(value); ok {
		n, err := opsem.NarrowFromFloat32(nil, t, inference.Float16)
		if err != nil {
			return "", err
		}
		n = saturateHalf(t, n)
		if s.readInFloat32(value) {
			h = s.x.fresh(value + "_float16")
		}
		s.g.Initializers[h] = n
	} else {
		h = s.x.fresh(value + "_float16")
		s.cast(value, h, onnxFloat16)
	}
	s.half[value] = h
	return h, nil
}

// maxHalf is float16's largest finite value, 65504, as its bits.
const maxHalf inference.Half = 0x7bff

// saturateHalf returns h, the float16 rounding of the float32 constant t,
// with the finite values of t beyond float16's range held at ±65504
// rather than ±Inf, as ONNX's float16 converters (onnxconverter-common)
// clip initializers. Exporters write "minus infinity" as float32's lowest
// value: Hugging Face's attention masks are (1 − mask)·finfo.min, which at
// −Inf makes 0·(−Inf) = NaN of every unmasked score. Inf and NaN stay.
func saturateHalf(t, h inference.Tensor) inference.Tensor {
	src, _ := inference.Data[float32](t)
	dst, _ := inference.Data[inference.Half](h)
	for i, v := range src {
		switch {
		case v > 65504 && !math.IsInf(float64(v), 1):
			dst[i] = maxHalf
		case v < -65504 && !math.IsInf(float64(v), -1):
			dst[i] = maxHalf | 0x8000
		}
	}
	return h
}

// cast adds a Cast from value in to value out of the ONNX type to.
func (s *store16) cast(in, out string, to int64) {
	s.added = append(s.added, &graph.Node{Name: s.x.fresh("Cast_" + out), OpType: "Cast",
		Inputs: []string{in}, Outputs: []string{out}, Attrs: map[string]graph.Attr{"to": {Type: graph.AttrInt, Int: to}}})
}
