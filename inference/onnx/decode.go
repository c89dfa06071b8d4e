// Package onnx reads ONNX model files into the graph IR and registers the
// "onnx" format, so that a Spec from Model runs in RunInference:
//
//	spec := onnx.Model("gs://bucket/models/resnet50.onnx")
//
// Decoding rejects hostile or broken files before it allocates for them: a
// tensor declaring more data than the file holds, a shape whose element
// count or byte size overflows, external data outside the model's folder or
// not a regular file (a FIFO would block the load). What it allocates grows
// linearly with the file, however deep subgraphs nest. Then graph.Sort
// rejects a model that can never run: a cycle, a node input that nothing
// produces, a value defined twice, an impossible declared shape, an opset
// the runtime does not implement.
//
// Who it is for: pipeline authors name their model with Model, and read
// its inputs, outputs and what each backend can run of it with Describe
// (or cmd/beamml-inspect); Decode is for tools and backend writers who
// want a file's graph (inference/graph) without loading it onto a device.
package onnx

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/internal/onnxpb"
)

// Decode parses a serialized ModelProto into a sorted, checked Graph. dir
// is the folder that external data locations are relative to; "" refuses
// external data.
//
// From IR version 4 on, an input of the model's graph that has an
// initializer of the same name goes to the Graph's Overridable: the
// initializer is its default, which a run may replace. Before IR 4 every
// initializer is also listed as an input; those are weights, left out of
// Inputs and not overridable (as ONNX Runtime reads them).
func Decode(data []byte, dir string) (*graph.Graph, error) {
	m, err := unmarshal(data)
	if err != nil {
		return nil, err
	}
	return decodeModel(m, dir)
}

// unmarshal parses a serialized ModelProto, which decodeModel turns into a
// Graph; Describe reads what the Graph drops (dimension names) from it.
func unmarshal(data []byte) (*onnxpb.ModelProto, error) {
	var m onnxpb.ModelProto
	if err := proto.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("onnx: not a model file: %v: %w", err, inference.ErrBadModel)
	}
	return &m, nil
}

func decodeModel(m *onnxpb.ModelProto, dir string) (*graph.Graph, error) {
	if m.Graph == nil {
		return nil, fmt.Errorf("onnx: model has no graph: %w", inference.ErrBadModel)
	}
	opsets := map[string]int64{}
	for _, o := range m.OpsetImport {
		d := o.Domain
		if d == "ai.onnx" {
			d = ""
		}
		opsets[d] = o.Version
	}
	if len(opsets) == 0 {
		opsets[""] = 1 // IR version 1 files predate opset_import
	}
	d := decoder{dir: dir, opsets: opsets, irVersion: m.IrVersion}
	g, err := d.graph(m.Graph)
	if err == nil {
		err = g.Sort(nil)
	}
	if err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	return g, nil
}

type decoder struct {
	dir       string
	opsets    map[string]int64
	irVersion int64
	depth     int // of the graph being decoded: 0 for the model's
}

// graph converts gp and the graphs nested in it; the caller sorts and
// checks the result (graph.Sort).
func (d *decoder) graph(gp *onnxpb.GraphProto) (*graph.Graph, error) {
	if gp == nil { // an attribute of type GRAPH without its graph
		return nil, fmt.Errorf("missing graph: %w", inference.ErrBadModel)
	}
	g := &graph.Graph{Name: gp.Name, Opsets: d.opsets, Initializers: make(map[string]inference.Tensor, len(gp.Initializer))}
	for _, tp := range gp.Initializer {
		if _, dup := g.Initializers[tp.Name]; dup {
			return nil, fmt.Errorf("graph %q: initializer %q is declared twice: %w", gp.Name, tp.Name, inference.ErrBadModel)
		}
		t, err := d.tensor(tp)
		if err != nil {
			return nil, fmt.Errorf("graph %q: initializer %q: %w", gp.Name, tp.Name, err)
		}
		g.Initializers[tp.Name] = t
	}
	if len(gp.SparseInitializer) > 0 {
		return nil, fmt.Errorf("graph %q: sparse initializers: %w", gp.Name, inference.ErrUnsupportedOp)
	}
	for _, vi := range gp.Input {
		// In the model's graph an initializer named like an input is the
		// input's default from IR 4 on; before, every initializer is
		// listed among the inputs, and is a weight. A subgraph's inputs
		// are bound by position, so it keeps them all.
		_, isInit := g.Initializers[vi.Name]
		if isInit && d.depth == 0 && d.irVersion < 4 {
			continue
		}
		v, err := value(vi)
		if err != nil {
			return nil, fmt.Errorf("graph %q: input %q: %w", gp.Name, vi.Name, err)
		}
		if isInit && d.depth == 0 {
			g.Overridable = append(g.Overridable, v)
		} else {
			g.Inputs = append(g.Inputs, v)
		}
	}
	maps := map[string]bool{} // outputs of ZipMap's type (zipmap.go)
	for _, vi := range gp.Output {
		if d.depth == 0 && mapOutput(vi) {
			maps[vi.Name] = true
			g.Outputs = append(g.Outputs, graph.Value{Name: vi.Name})
			continue
		}
		v, err := value(vi)
		if err != nil {
			return nil, fmt.Errorf("graph %q: output %q: %w", gp.Name, vi.Name, err)
		}
		g.Outputs = append(g.Outputs, v)
	}
	for i, np := range gp.Node {
		n := &graph.Node{Name: np.Name, OpType: np.OpType, Domain: np.Domain, Inputs: np.Input, Outputs: np.Output, Attrs: map[string]graph.Attr{}}
		if n.Domain == "ai.onnx" {
			n.Domain = ""
		}
		if n.Name == "" {
			n.Name = fmt.Sprintf("%s_%d", np.OpType, i)
		}
		for _, ap := range np.Attribute {
			a, err := d.attr(ap)
			if err != nil {
				if d.depth > 0 && (a.Type == graph.AttrGraph || a.Type == graph.AttrGraphs) {
					// The error names the graph it is in; only the model's
					// graph adds its node, so that the message does not grow
					// with the depth.
					return nil, err
				}
				return nil, fmt.Errorf("graph %q: node %v: attribute %q: %w", gp.Name, n, ap.Name, err)
			}
			n.Attrs[ap.Name] = a
		}
		if err := typeAttrs(n); err != nil {
			return nil, fmt.Errorf("graph %q: %w", gp.Name, err)
		}
		g.Nodes = append(g.Nodes, n)
	}
	if d.depth == 0 {
		if err := zipMapOutputs(g, maps); err != nil {
			return nil, fmt.Errorf("graph %q: %w", gp.Name, err)
		}
	}
	return g, nil
}

func (d *decoder) attr(ap *onnxpb.AttributeProto) (graph.Attr, error) {
	if ap.RefAttrName != "" {
		return graph.Attr{}, fmt.Errorf("reference to function attribute %q: %w", ap.RefAttrName, inference.ErrUnsupportedOp)
	}
	typ := ap.Type
	if typ == onnxpb.AttributeProto_UNDEFINED {
		typ = inferAttrType(ap) // IR version 1 files leave the type out
	}
	switch typ {
	case onnxpb.AttributeProto_FLOAT:
		return graph.Attr{Type: graph.AttrFloat, Float: ap.F}, nil
	case onnxpb.AttributeProto_INT:
		return graph.Attr{Type: graph.AttrInt, Int: ap.I}, nil
	case onnxpb.AttributeProto_STRING:
		return graph.Attr{Type: graph.AttrString, String: string(ap.S)}, nil
	case onnxpb.AttributeProto_TENSOR:
		t, err := d.tensor(ap.T)
		return graph.Attr{Type: graph.AttrTensor, Tensor: t}, err
	case onnxpb.AttributeProto_GRAPH:
		if ap.G == nil {
			return graph.Attr{}, fmt.Errorf("missing graph: %w", inference.ErrBadModel)
		}
		d.depth++
		defer func() { d.depth-- }()
		g, err := d.graph(ap.G)
		return graph.Attr{Type: graph.AttrGraph, Graph: g}, err
	case onnxpb.AttributeProto_FLOATS:
		return graph.Attr{Type: graph.AttrFloats, Floats: ap.Floats}, nil
	case onnxpb.AttributeProto_INTS:
		return graph.Attr{Type: graph.AttrInts, Ints: ap.Ints}, nil
	case onnxpb.AttributeProto_STRINGS:
		ss := make([]string, len(ap.Strings))
		for i, s := range ap.Strings {
			ss[i] = string(s)
		}
		return graph.Attr{Type: graph.AttrStrings, Strings: ss}, nil
	case onnxpb.AttributeProto_TENSORS:
		a := graph.Attr{Type: graph.AttrTensors}
		for _, tp := range ap.Tensors {
			t, err := d.tensor(tp)
			if err != nil {
				return a, err
			}
			a.Tensors = append(a.Tensors, t)
		}
		return a, nil
	case onnxpb.AttributeProto_GRAPHS:
		d.depth++
		defer func() { d.depth-- }()
		a := graph.Attr{Type: graph.AttrGraphs}
		for _, gp := range ap.Graphs {
			g, err := d.graph(gp)
			if err != nil {
				return a, err
			}
			a.Graphs = append(a.Graphs, g)
		}
		return a, nil
	}
	return graph.Attr{}, fmt.Errorf("attribute type %v: %w", typ, inference.ErrUnsupportedOp)
}

func inferAttrType(ap *onnxpb.AttributeProto) onnxpb.AttributeProto_AttributeType {
	switch {
	case len(ap.Floats) > 0:
		return onnxpb.AttributeProto_FLOATS
	case len(ap.Ints) > 0:
		return onnxpb.AttributeProto_INTS
	case len(ap.Strings) > 0:
		return onnxpb.AttributeProto_STRINGS
	case ap.T != nil:
		return onnxpb.AttributeProto_TENSOR
	case ap.G != nil:
		return onnxpb.AttributeProto_GRAPH
	case len(ap.S) > 0:
		return onnxpb.AttributeProto_STRING
	case ap.F != 0:
		return onnxpb.AttributeProto_FLOAT
	}
	return onnxpb.AttributeProto_INT
}

// typeAttrs checks the attributes of n that name an element type (Cast's
// to, the generators' dtype, output_dtype): one a Tensor does not hold
// fails the load with ErrUnsupportedType, as the model's own types do.
func typeAttrs(n *graph.Node) error {
	if n.Domain != "" {
		return nil
	}
	for _, name := range []string{"to", "dtype", "output_dtype"} {
		a, ok := n.Attrs[name]
		if !ok || a.Type != graph.AttrInt {
			continue
		}
		if _, ok := inference.DTypeFromONNX(a.Int); !ok {
			return &inference.UnsupportedOpError{Node: n.Name, Op: n.OpType,
				Detail: fmt.Sprintf("attribute %q: element type %s", name, inference.ONNXTypeName(a.Int)), Type: true}
		}
	}
	return nil
}

// DType maps an ONNX TensorProto data type to ours.
func DType(onnxType int32) (inference.DType, error) {
	if d, ok := inference.DTypeFromONNX(int64(onnxType)); ok {
		return d, nil
	}
	return 0, fmt.Errorf("element type %s: %w", inference.ONNXTypeName(int64(onnxType)), inference.ErrUnsupportedType)
}

func value(vi *onnxpb.ValueInfoProto) (graph.Value, error) {
	v := graph.Value{Name: vi.Name}
	tt := vi.GetType().GetTensorType()
	if tt == nil {
		if vi.Type == nil {
			return v, nil // untyped: allowed for outputs of IR 3 files
		}
		return v, fmt.Errorf("not a tensor (sequence, map or optional): %w", inference.ErrUnsupportedOp)
	}
	dt, err := DType(tt.ElemType)
	if err != nil {
		return v, err
	}
	v.DType = dt
	if tt.Shape != nil {
		v.Shape = make([]int, len(tt.Shape.Dim))
		for i, dim := range tt.Shape.Dim {
			v.Shape[i] = inference.Dynamic // a dim_param, or nothing
			if dv, ok := dim.Value.(*onnxpb.TensorShapeProto_Dimension_DimValue); ok {
				if dv.DimValue < math.MinInt || dv.DimValue > math.MaxInt {
					return v, fmt.Errorf("dimension %d is %d: %w", i, dv.DimValue, inference.ErrBadModel)
				}
				// -1, which some exporters write for any size, is
				// inference.Dynamic; graph.Sort refuses other negatives.
				v.Shape[i] = int(dv.DimValue)
			}
		}
	}
	return v, nil
}

// ReadTensor parses a serialized TensorProto (the conformance tests' .pb
// files) and returns its name and value. External data is refused.
func ReadTensor(data []byte) (string, inference.Tensor, error) {
	var tp onnxpb.TensorProto
	if err := proto.Unmarshal(data, &tp); err != nil {
		return "", inference.Tensor{}, fmt.Errorf("onnx: not a tensor file: %v: %w", err, inference.ErrBadModel)
	}
	t, err := (&decoder{}).tensor(&tp)
	return tp.Name, t, err
}

// tensor converts a TensorProto, checking the declared size against the
// bytes present before it allocates.
func (d *decoder) tensor(tp *onnxpb.TensorProto) (inference.Tensor, error) {
	if tp == nil {
		return inference.Tensor{}, fmt.Errorf("missing tensor: %w", inference.ErrBadModel)
	}
	dt, err := DType(tp.DataType)
	if err != nil {
		return inference.Tensor{}, err
	}
	shape := make([]int, len(tp.Dims))
	for i, dim := range tp.Dims {
		if dim < 0 || dim > math.MaxInt32 {
			return inference.Tensor{}, fmt.Errorf("dimension %d is %d: %w", i, dim, inference.ErrBadModel)
		}
		shape[i] = int(dim)
	}
	n, err := inference.NumElements(shape)
	if err != nil {
		return inference.Tensor{}, fmt.Errorf("shape %v: %v: %w", shape, err, inference.ErrBadModel)
	}
	if n > math.MaxInt/dt.Size() {
		return inference.Tensor{}, fmt.Errorf("%v%v: its size in bytes overflows: %w", dt, shape, inference.ErrBadModel)
	}
	size := n * dt.Size()
	if tp.Segment != nil {
		return inference.Tensor{}, fmt.Errorf("segmented tensor: %w", inference.ErrUnsupportedOp)
	}
	raw := tp.RawData
	if tp.DataLocation == onnxpb.TensorProto_EXTERNAL {
		if raw, err = d.external(tp, size); err != nil {
			return inference.Tensor{}, err
		}
	}
	if raw != nil || tp.DataLocation == onnxpb.TensorProto_EXTERNAL {
		if len(raw) != size {
			return inference.Tensor{}, fmt.Errorf("%v%v declares %d bytes of data, %d present: %w", dt, shape, size, len(raw), inference.ErrBadModel)
		}
		return fromRaw(dt, shape, raw)
	}
	var have int
	switch dt {
	case inference.Float32:
		have = len(tp.FloatData)
	case inference.Int64:
		have = len(tp.Int64Data)
	case inference.Float64:
		have = len(tp.DoubleData)
	case inference.Uint32, inference.Uint64:
		have = len(tp.Uint64Data)
	case inference.String:
		have = len(tp.StringData)
	default: // the narrower types, bool and the 16-bit floats (their bits) are stored in int32_data
		have = len(tp.Int32Data)
	}
	if have != n {
		return inference.Tensor{}, fmt.Errorf("%v%v declares %d values, %d present: %w", dt, shape, n, have, inference.ErrBadModel)
	}
	switch dt {
	case inference.Float32:
		return inference.New(shape, tp.FloatData)
	case inference.Int64:
		return inference.New(shape, tp.Int64Data)
	case inference.Float64:
		return inference.New(shape, tp.DoubleData)
	case inference.Int32:
		return inference.New(shape, tp.Int32Data)
	case inference.Uint64:
		return inference.New(shape, tp.Uint64Data)
	case inference.Uint32:
		return narrowed[uint32](dt, shape, "uint64_data", tp.Uint64Data, 0, math.MaxUint32)
	case inference.String:
		v := make([]string, n)
		for i, b := range tp.StringData {
			if !utf8.Valid(b) {
				return inference.Tensor{}, fmt.Errorf("%v%v: string_data[%d] is not UTF-8: %w", dt, shape, i, inference.ErrBadModel)
			}
			v[i] = string(b)
		}
		return inference.New(shape, v)
	case inference.Bool:
		v := make([]bool, n)
		for i, x := range tp.Int32Data {
			v[i] = x != 0
		}
		return inference.New(shape, v)
	case inference.Int8:
		return narrowed[int8](dt, shape, "int32_data", tp.Int32Data, math.MinInt8, math.MaxInt8)
	case inference.Int16:
		return narrowed[int16](dt, shape, "int32_data", tp.Int32Data, math.MinInt16, math.MaxInt16)
	case inference.Uint8:
		return narrowed[uint8](dt, shape, "int32_data", tp.Int32Data, 0, math.MaxUint8)
	case inference.Uint16:
		return narrowed[uint16](dt, shape, "int32_data", tp.Int32Data, 0, math.MaxUint16)
	case inference.Float16:
		return narrowed[inference.Half](dt, shape, "int32_data", tp.Int32Data, 0, math.MaxUint16)
	case inference.BFloat16:
		return narrowed[inference.BF16](dt, shape, "int32_data", tp.Int32Data, 0, math.MaxUint16)
	}
	return inference.Tensor{}, fmt.Errorf("%v%v in typed fields: %w", dt, shape, inference.ErrUnsupportedType)
}

// narrowed converts the values of a wider typed field of a TensorProto
// (int32_data, uint64_data) to T, each of which must lie in [lo, hi]: the
// value, or for the 16-bit floats the bits.
func narrowed[T interface {
	int8 | int16 | uint8 | uint16 | uint32 | inference.Half | inference.BF16
}, W int32 | uint64](dt inference.DType, shape []int, fieldName string, field []W, lo, hi int64) (inference.Tensor, error) {
	v := make([]T, len(field))
	for i, x := range field {
		if w := int64(x); w < lo || w > hi { // a uint64 above MaxInt64 wraps below lo, 0
			return inference.Tensor{}, fmt.Errorf("%v%v: %s[%d] is %v, out of the type's range: %w", dt, shape, fieldName, i, x, inference.ErrBadModel)
		}
		v[i] = T(x)
	}
	return inference.New(shape, v)
}

func fromRaw(dt inference.DType, shape []int, raw []byte) (inference.Tensor, error) {
	if dt == inference.String {
		return inference.Tensor{}, fmt.Errorf("%v%v in raw_data, which ONNX does not allow for strings: %w", dt, shape, inference.ErrBadModel)
	}
	t, err := inference.FromLittleEndian(dt, shape, raw)
	if err != nil {
		return t, fmt.Errorf("raw data: %v: %w", err, inference.ErrBadModel)
	}
	return t, nil
}

// external reads a tensor's external data: want bytes at an offset in a
// regular file inside the model's folder. The file's size bounds what is
// allocated, and only those bytes are read.
func (d *decoder) external(tp *onnxpb.TensorProto, want int) ([]byte, error) {
	var location, offsetText, lengthText string
	for _, kv := range tp.ExternalData {
		switch kv.Key {
		case "location":
			location = kv.Value
		case "offset":
			offsetText = kv.Value
		case "length":
			lengthText = kv.Value
		}
	}
	offset, length := int64(0), int64(want)
	for _, f := range []struct {
		key, text string
		v         *int64
	}{{"offset", offsetText, &offset}, {"length", lengthText, &length}} {
		if f.text == "" {
			continue
		}
		v, err := strconv.ParseInt(f.text, 10, 64)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("external data %q: %s %q is not a byte count: %w", location, f.key, f.text, inference.ErrBadModel)
		}
		*f.v = v
	}
	if length != int64(want) {
		return nil, fmt.Errorf("external data %q: length %d, tensor needs %d bytes: %w", location, length, want, inference.ErrBadModel)
	}
	if d.dir == "" {
		return nil, fmt.Errorf("external data %q: the model was not read from a folder: %w", location, inference.ErrBadModel)
	}
	if location == "" || filepath.IsAbs(location) || strings.HasPrefix(location, "/") ||
		slices.Contains(strings.Split(filepath.ToSlash(location), "/"), "..") {
		return nil, fmt.Errorf("external data location %q is outside the model's folder: %w", location, inference.ErrBadModel)
	}
	root, err := filepath.EvalSymlinks(d.dir)
	if err != nil {
		return nil, fmt.Errorf("external data: model folder: %v: %w", err, inference.ErrBadModel)
	}
	path, err := filepath.EvalSymlinks(filepath.Join(root, location))
	if err != nil {
		return nil, fmt.Errorf("external data %q: %v: %w", location, err, inference.ErrBadModel)
	}
	if rel, err := filepath.Rel(root, path); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("external data %q resolves to %s, outside the model's folder: %w", location, path, inference.ErrBadModel)
	}
	// Opening a FIFO for reading waits for a writer, and reading a device
	// may never end: only regular files are opened, and without waiting
	// (openFlags) in case one is swapped for a FIFO after this check.
	before, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("external data %q: %v: %w", location, err, inference.ErrBadModel)
	}
	if !before.Mode().IsRegular() {
		return nil, fmt.Errorf("external data %q: %s is not a regular file (%v): %w", location, path, before.Mode().Type(), inference.ErrBadModel)
	}
	f, err := os.OpenFile(path, openFlags, 0)
	if err != nil {
		return nil, fmt.Errorf("external data %q: %v: %w", location, err, inference.ErrBadModel)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("external data %q: %v: %w", location, err, inference.ErrBadModel)
	}
	if !st.Mode().IsRegular() || !os.SameFile(before, st) {
		return nil, fmt.Errorf("external data %q: %s changed while it was opened: %w", location, path, inference.ErrBadModel)
	}
	if offset > st.Size() || length > st.Size()-offset {
		return nil, fmt.Errorf("external data %q: offset %d length %d in a %d-byte file: %w", location, offset, length, st.Size(), inference.ErrBadModel)
	}
	buf := make([]byte, length)
	if _, err := f.ReadAt(buf, offset); err != nil {
		return nil, fmt.Errorf("external data %q: %v: %w", location, err, inference.ErrBadModel)
	}
	return buf, nil
}
