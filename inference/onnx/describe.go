package onnx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/family"
	"github.com/beamml/beamml/internal/onnxpb"
)

// Description is what an ONNX model file declares (its inputs, outputs,
// opsets and operators) and what the backends of this binary can run of
// it: what a pipeline author needs to write the code at both ends of
// RunInference without loading the model. Describe makes it;
// cmd/beamml-inspect prints it.
type Description struct {
	URI       string
	IRVersion int64
	Producer  string // the exporter, as "pytorch 1.13.0"; "" when the file does not say
	// Inputs are the inputs a run must feed, in the model's order.
	Inputs []ValueInfo
	// Defaults are the inputs that have an initializer as their default
	// value (ONNX IR ≥ 4): a run may feed them, and need not.
	Defaults []ValueInfo
	Outputs  []ValueInfo
	// Opsets are the operator sets the model imports, the default domain
	// ("", ai.onnx) first, then by domain.
	Opsets []Opset
	// Ops counts the nodes of each operator, those of subgraphs (the
	// bodies of If, Loop, Scan) included, sorted by operator.
	Ops []OpCount
	// Backends says what each backend linked into this binary can run:
	// always the CPU; CUDA where the binary links inference/cuda (a GPU
	// worker, cmd/beamml-inspect), which needs no GPU nor cgo to answer.
	Backends []Support
}

// ValueInfo is one input or output of a model.
type ValueInfo struct {
	Name  string
	DType inference.DType // 0 when the file does not say (outputs of IR 3 files)
	// Shape is nil when the file does not declare the rank; a scalar has
	// an empty, non-nil Shape.
	Shape []Dim
	// Labels are the class labels of an output the model declares as a
	// sequence of maps from label to score (ZipMap's): the runtime gives
	// it as a [rows, classes] float32 tensor, Labels[j] the class of
	// column j (graph.Value.Labels).
	Labels []string
}

// Dim is one dimension of a declared shape: a fixed Size, or a size given
// at run time (Size is inference.Dynamic) that the exporter may have
// named, as "batch" or "sequence".
type Dim struct {
	Size  int
	Param string // the dim_param; "" for a fixed or an unnamed dimension
}

// Opset is an operator set a model imports.
type Opset struct {
	Domain  string // "" for the default domain, ai.onnx
	Version int64
}

// OpCount is the number of nodes of one operator.
type OpCount struct {
	Op    string // the operator type, prefixed with its domain outside ai.onnx: "com.microsoft.Attention"
	Count int
}

// Support is what one backend can run of a model.
type Support struct {
	Device inference.Device
	// Unsupported are the operators the backend has no kernel for: loading
	// the model on it fails with inference.ErrUnsupportedOp.
	Unsupported []string
	// Host are the operators a GPU backend has no device kernel for, which
	// run on the host with the CPU's kernels, their inputs copied down and
	// their outputs up. An operator not listed has a device kernel, which
	// may still leave a node to the host at shapes or types it does not
	// handle, and graph passes fold or fuse some nodes away: a loaded
	// cuda.Model's HostNodes is the final word.
	Host []string
}

// Describe reads the ONNX model at uri (a local path, a file:// URI, or any
// scheme with a registered opener, as for Model) and describes it. It
// decodes and checks the model as loading does, so a file that would not
// load for being malformed fails here with the same error (wrapping
// inference.ErrBadModel), as does one importing an ai.onnx opset newer
// than graph.MaxOpset; an input or weight of an element type the runtime
// lacks (float64, bfloat16, string) fails it with
// inference.ErrUnsupportedOp. An operator that no backend implements does
// not fail it, and shows in Backends.
func Describe(ctx context.Context, uri string) (Description, error) {
	data, dir, err := read(ctx, uri)
	if err != nil {
		return Description{}, err
	}
	m, err := unmarshal(data)
	if err != nil {
		return Description{}, fmt.Errorf("%s: %w", uri, err)
	}
	g, err := decodeModel(m, dir)
	if err != nil {
		return Description{}, fmt.Errorf("%s: %w", uri, err)
	}
	d := Description{URI: uri, IRVersion: m.IrVersion, Producer: strings.TrimSpace(m.ProducerName + " " + m.ProducerVersion)}
	declared := map[string]*onnxpb.ValueInfoProto{}
	for _, vi := range append(slices.Clip(m.Graph.Input), m.Graph.Output...) {
		declared[vi.Name] = vi
	}
	describe := func(vs []graph.Value) []ValueInfo {
		var out []ValueInfo
		for _, v := range vs {
			out = append(out, valueInfo(v, declared[v.Name]))
		}
		return out
	}
	d.Inputs, d.Defaults, d.Outputs = describe(g.Inputs), describe(g.Overridable), describe(g.Outputs)
	for _, domain := range slices.Sorted(maps.Keys(g.Opsets)) {
		d.Opsets = append(d.Opsets, Opset{Domain: domain, Version: g.Opsets[domain]})
	}

	counts := map[string]int{}
	nodes := map[string]*graph.Node{} // one node of each operator, for the checks
	var walk func(*graph.Graph)
	walk = func(g *graph.Graph) {
		for _, n := range g.Nodes {
			op := n.OpType
			if n.Domain != "" {
				op = n.Domain + "." + n.OpType
			}
			counts[op]++
			if nodes[op] == nil {
				nodes[op] = &graph.Node{Name: n.Name, OpType: n.OpType, Domain: n.Domain}
			}
			for _, sub := range n.Subgraphs() {
				walk(sub)
			}
		}
	}
	walk(g)
	ops := slices.Sorted(maps.Keys(counts))
	for _, op := range ops {
		d.Ops = append(d.Ops, OpCount{Op: op, Count: counts[op]})
	}

	// The CPU's kernels are what cpu.Check looks up; asked one operator at
	// a time (a graph of one node, without its subgraphs, which walk
	// visits), it answers for each instead of for the first it lacks. The
	// node has no attributes, which the operators that check theirs refuse
	// with ErrBadModel: that is no answer about the kernel.
	cpuSupport := Support{Device: inference.CPU}
	for _, op := range ops {
		if err := cpu.Check(&graph.Graph{Opsets: g.Opsets, Nodes: []*graph.Node{nodes[op]}}); err != nil && !errors.Is(err, inference.ErrBadModel) {
			cpuSupport.Unsupported = append(cpuSupport.Unsupported, op)
		}
	}
	d.Backends = append(d.Backends, cpuSupport)
	// The CUDA backend compiles what cpu.Check accepts and runs on the
	// host each operator it has no lowering for; its lowerings record
	// themselves in family, under "cuda", when the package is linked.
	if lowered := family.Of("cuda"); len(lowered) > 0 {
		cudaSupport := Support{Device: inference.CUDA, Unsupported: cpuSupport.Unsupported}
		for _, op := range ops {
			if _, ok := lowered[op]; !ok && !slices.Contains(cpuSupport.Unsupported, op) {
				cudaSupport.Host = append(cudaSupport.Host, op)
			}
		}
		d.Backends = append(d.Backends, cudaSupport)
	}
	return d, nil
}

// valueInfo joins what the graph keeps of a value to the dimension names
// that only the file has.
func valueInfo(v graph.Value, vi *onnxpb.ValueInfoProto) ValueInfo {
	out := ValueInfo{Name: v.Name, DType: v.DType, Labels: v.Labels}
	if v.Shape == nil {
		return out
	}
	out.Shape = make([]Dim, len(v.Shape))
	dims := vi.GetType().GetTensorType().GetShape().GetDim()
	for i, size := range v.Shape {
		out.Shape[i].Size = size
		if size == inference.Dynamic && i < len(dims) {
			out.Shape[i].Param = dims[i].GetDimParam()
		}
	}
	return out
}

// String is the dimension as Describe's report writes it: its size, its
// name, or ? for a size given at run time that has no name.
func (d Dim) String() string {
	switch {
	case d.Size != inference.Dynamic:
		return strconv.Itoa(d.Size)
	case d.Param != "":
		return d.Param
	}
	return "?"
}

// String is the value as "input_ids int64[batch sequence]", as
// inference.TensorInfo writes it but with the dimensions' names; a type
// the file does not declare is "?", and a shape it does not declare is
// said so ("out float32, shape not declared"): [?] is a rank-1 shape.
func (v ValueInfo) String() string {
	typ := "?"
	if v.DType != 0 {
		typ = v.DType.String()
	}
	if v.Labels != nil {
		return fmt.Sprintf("%s %s[? %d], scores by class label: %s (a ZipMap's maps)", v.Name, typ, len(v.Labels), strings.Join(v.Labels, " "))
	}
	if v.Shape == nil {
		return fmt.Sprintf("%s %s, shape not declared", v.Name, typ)
	}
	dims := make([]string, len(v.Shape))
	for i, d := range v.Shape {
		dims[i] = d.String()
	}
	return fmt.Sprintf("%s %s[%s]", v.Name, typ, strings.Join(dims, " "))
}

// String is the report Format writes.
func (d Description) String() string {
	var b strings.Builder
	d.Format(&b)
	return b.String()
}

// Format writes the description as a report a person reads, one fact a
// line:
//
//	examples/classify/digits.onnx
//	  producer: pytorch 1.13.0, IR version 7
//	  opsets:   ai.onnx 13
//	  inputs:   pixels float32[batch 64]
//	  outputs:  logits float32[batch 10]
//	  operators (3 nodes): Gemm 2, Relu 1
//	  cpu:      runs every operator
//	  cuda:     a device kernel for every operator
func (d Description) Format(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintln(&b, d.URI)
	producer := d.Producer
	if producer == "" {
		producer = "not recorded"
	}
	fmt.Fprintf(&b, "  producer: %s, IR version %d\n", producer, d.IRVersion)
	opsets := make([]string, len(d.Opsets))
	for i, o := range d.Opsets {
		domain := o.Domain
		if domain == "" {
			domain = "ai.onnx"
		}
		opsets[i] = fmt.Sprintf("%s %d", domain, o.Version)
	}
	fmt.Fprintf(&b, "  opsets:   %s\n", strings.Join(opsets, ", "))
	values := func(label string, vs []ValueInfo) {
		for i, v := range vs {
			if i > 0 {
				label = ""
			}
			fmt.Fprintf(&b, "  %-9s %v\n", label, v)
		}
	}
	values("inputs:", d.Inputs)
	values("defaults:", d.Defaults) // printed only when there are some
	values("outputs:", d.Outputs)
	ops, nodes := make([]string, len(d.Ops)), 0
	for i, o := range d.Ops {
		ops[i] = fmt.Sprintf("%s %d", o.Op, o.Count)
		nodes += o.Count
	}
	fmt.Fprintf(&b, "  operators (%d nodes): %s\n", nodes, strings.Join(ops, ", "))
	hasCUDA := false
	for _, s := range d.Backends {
		var says []string
		if len(s.Unsupported) > 0 {
			says = append(says, "cannot run "+strings.Join(s.Unsupported, ", ")+" (the model does not load)")
		}
		if len(s.Host) > 0 {
			says = append(says, "on the host (no device kernel): "+strings.Join(s.Host, ", "))
		}
		if len(says) == 0 {
			says = append(says, "runs every operator")
			if s.Device == inference.CUDA {
				says[0] = "a device kernel for every operator"
			}
		}
		hasCUDA = hasCUDA || s.Device == inference.CUDA
		fmt.Fprintf(&b, "  %-9s %s\n", string(s.Device)+":", strings.Join(says, "; "))
	}
	if !hasCUDA {
		fmt.Fprintf(&b, "  %-9s not linked into this binary (cmd/beamml-inspect reports it)\n", "cuda:")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
