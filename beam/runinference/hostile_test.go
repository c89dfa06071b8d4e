package runinference_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/beamml/beamml/beam/runinference"
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/internal/onnxpb"
)

// The 1%-hostile pipeline of issue 11: a real ONNX model on the CPU,
// loaded by a user's own loader that panics or hangs on marked rows, and
// 10,000 keyed elements of which 1% are hostile, one class in five each:
//
//   - bomb: an element whose output needs 16 GiB (an outer product of its
//     2¹⁶ column sums), over the transform's 64 MiB budget;
//   - empty: float32[0, 2⁶²], no elements, whose column sums would be 2⁶²;
//   - panic: a row the loader's Run panics on;
//   - hang: a row the loader's Run blocks on, half of them ignoring the
//     run's context (abandoned at the deadline) and half honouring it;
//   - shape: a rank-1 element for a rank-2 input.
//
// With the failures output, results and failures together are the inputs,
// each exactly once, every hostile element a failure with its reason, and
// the job succeeds. Without it, the job fails with an error naming the
// element, and the process goes on.

const hostileFormat = "hostile-test"

// The loader's markers: the first value of a row.
const (
	panicMarker = -13
	hangMarker  = -17 // honours the context
	stuckMarker = -19 // ignores it, until the test ends
)

// stuck is closed to release the runs that ignore their context: each
// test makes its own and closes it when its pipelines are done.
var stuck struct {
	sync.Mutex
	release chan struct{}
}

func holdStuckRuns(t *testing.T) {
	stuck.Lock()
	defer stuck.Unlock()
	release := make(chan struct{})
	stuck.release = release
	t.Cleanup(func() { close(release) })
}

func stuckRelease() chan struct{} {
	stuck.Lock()
	defer stuck.Unlock()
	return stuck.release
}

func init() {
	// A user's own loader: it loads the ONNX model named by its option
	// "model" on the CPU and wraps Run.
	inference.RegisterLoader(hostileFormat, func(ctx context.Context, spec inference.Spec, _ inference.Backend) (inference.Model, error) {
		h, err := inference.Acquire(ctx, inference.Spec{URI: spec.Options["model"], Format: "onnx", Device: inference.CPU})
		if err != nil {
			return nil, err
		}
		return &faultyModel{Model: h.Model(), h: h}, nil
	})
	register.Function2x1(classifyResult)
	register.Function2x1(classifyFailure)
}

type faultyModel struct {
	inference.Model
	h *inference.Handle
}

func (m *faultyModel) Run(ctx context.Context, in map[string]inference.Tensor) (map[string]inference.Tensor, error) {
	if x, err := inference.Data[float32](in["x"]); err == nil && len(x) > 0 {
		shape := in["x"].Shape()
		for r := range shape[0] {
			switch x[r*len(x)/shape[0]] {
			case panicMarker:
				var rows []int
				_ = rows[r+1] // a user's bug: index out of range
			case hangMarker:
				<-ctx.Done()
				return nil, ctx.Err()
			case stuckMarker:
				<-stuckRelease()
				return nil, fmt.Errorf("released")
			}
		}
	}
	return m.Model.Run(ctx, in)
}

func (m *faultyModel) Close() error { m.h.Release(); return nil }

// hostileModel is y = Σ_ij (Σ_a x_aj)(Σ_a x_ai) over x float32[batch, a, c]:
// column sums, then their outer product, [c, c] per row.
func hostileModel(t *testing.T) inference.Spec {
	dyn, value := dynamicDim, floatValue
	keep0 := []*onnxpb.AttributeProto{{Name: "keepdims", Type: onnxpb.AttributeProto_INT, I: 0}}
	onnxSpec := memModel(t, "hostile.onnx", &onnxpb.GraphProto{
		Name: "hostile",
		Node: []*onnxpb.NodeProto{
			{Name: "colsum", OpType: "ReduceSum", Input: []string{"x", "axis1"}, Output: []string{"s"}, Attribute: keep0},
			{Name: "column", OpType: "Unsqueeze", Input: []string{"s", "axis2"}, Output: []string{"column"}},
			{Name: "row", OpType: "Unsqueeze", Input: []string{"s", "axis1"}, Output: []string{"row"}},
			{Name: "outer", OpType: "MatMul", Input: []string{"column", "row"}, Output: []string{"outer"}},
			{Name: "sum", OpType: "ReduceSum", Input: []string{"outer", "axes12"}, Output: []string{"y"}, Attribute: keep0},
		},
		Initializer: []*onnxpb.TensorProto{int64s("axis1", 1), int64s("axis2", 2), int64s("axes12", 1, 2)},
		Input:       []*onnxpb.ValueInfoProto{value("x", dyn("batch"), dyn("a"), dyn("c"))},
		Output:      []*onnxpb.ValueInfoProto{value("y", dyn("batch"))},
	})
	return inference.Spec{URI: "hostile:" + onnxSpec.URI, Format: hostileFormat, Options: map[string]string{"model": onnxSpec.URI}}
}

// hostileClass is the class of element i: "" for a good one.
func hostileClass(i int) string {
	if i%100 != 7 {
		return ""
	}
	return []string{"bomb", "empty", "panic", "hang", "shape"}[(i/100)%5]
}

// hostileElement builds element i; good ones are float32[2, 2] of small
// integers.
func hostileElement(i int) inference.Example {
	var x inference.Tensor
	var err error
	v := float32(i % 5)
	switch hostileClass(i) {
	case "":
		x, err = inference.New([]int{2, 2}, []float32{v, 1, 2, v})
	case "bomb":
		x, err = inference.New([]int{2, 1 << 16}, make([]float32, 2<<16))
	case "empty":
		x, err = inference.New([]int{0, 1 << 62}, []float32{})
	case "panic":
		x, err = inference.New([]int{2, 2}, []float32{panicMarker, 0, 0, 0})
	case "hang":
		marker := float32(hangMarker)
		if (i/500)%2 == 1 {
			marker = stuckMarker
		}
		x, err = inference.New([]int{2, 2}, []float32{marker, 0, 0, 0})
	case "shape":
		x, err = inference.New([]int{4}, []float32{1, 2, 3, 4})
	}
	if err != nil {
		panic(err) // the shapes above fit their data
	}
	return inference.Example{"x": x}
}

// wantGood is the output of a good element i: (Σ column sums)² of
// [[v, 1], [2, v]] is (v+2 + 1+v)².
func wantGood(i int) float32 {
	v := float32(i % 5)
	return (2*v + 3) * (2*v + 3)
}

func classifyResult(id int, r runinference.PredictionResult) string {
	y, err := inference.Data[float32](r.Outputs["y"])
	if err != nil || len(y) != 1 {
		return fmt.Sprintf("%d: bad output %v", id, r.Outputs["y"])
	}
	return fmt.Sprintf("%d: %g", id, y[0])
}

// classifyFailure names the class a failure's stage and error show.
func classifyFailure(id int, f runinference.Failure) string {
	class := "unexplained: " + f.Err
	switch {
	case f.Stage == runinference.StageInput && strings.Contains(f.Err, `input "x": shape [4], want [? ?]`):
		class = "shape"
	case f.Stage != runinference.StageInference:
	case strings.Contains(f.Err, `node "colsum" (ReduceSum)`) && strings.Contains(f.Err, "over the memory budget of 64.0 MiB"):
		class = "empty"
	case strings.Contains(f.Err, `node "outer" (MatMul)`) && strings.Contains(f.Err, "over the memory budget of 64.0 MiB"):
		class = "bomb"
	case strings.Contains(f.Err, "inference: panic in Model.Run: runtime error: index out of range") && strings.Contains(f.Err, "faultyModel"):
		class = "panic"
	case strings.Contains(f.Err, "timed out after 100ms (InferenceTimeout)"):
		class = "hang"
	}
	return fmt.Sprintf("%d: %s", id, class)
}

func hostileOptions() []runinference.Option {
	return []runinference.Option{runinference.MaxBatchSize(16), runinference.MemoryBudget(64 << 20),
		runinference.InferenceTimeout(100 * time.Millisecond)}
}

func TestHostileElementsGoToFailures(t *testing.T) {
	holdStuckRuns(t)
	const n = 10_000
	spec := hostileModel(t)
	var in []any
	var good, failed []any
	classes := map[string]int{}
	for i := range n {
		in = append(in, i)
		if c := hostileClass(i); c != "" {
			failed = append(failed, fmt.Sprintf("%d: %s", i, c))
			classes[c]++
		} else {
			good = append(good, fmt.Sprintf("%d: %g", i, wantGood(i)))
		}
	}
	t.Logf("%d elements, %d hostile: %v", n, len(failed), classes)
	p, s := beam.NewPipelineWithRoot()
	ids := beam.Create(s, in...)
	keyed := beam.ParDo(s, &hostileElementFn{}, ids)
	results, failures := runinference.RunInferenceKeyedWithFailures(s, spec, keyed, hostileOptions()...)
	// Equal as multisets: every element once, in one output or the other.
	passert.Equals(s, beam.ParDo(s, classifyResult, results), good...)
	passert.Equals(s, beam.ParDo(s, classifyFailure, failures), failed...)
	ptest.RunAndValidate(t, p)
}

// Without the failures output, each class fails the job with an error
// naming the element's key; the test process goes on to the next.
func TestHostileElementFailsJobWithoutFailuresOutput(t *testing.T) {
	holdStuckRuns(t)
	spec := hostileModel(t)
	for _, hostile := range []int{7, 107, 207, 307, 807, 407} { // bomb, empty, panic, hang, stuck hang, shape
		t.Run(hostileClass(hostile)+strconv.Itoa(hostile), func(t *testing.T) {
			in := []any{0, 1, 2, 3, hostile, 5, 6}
			p, s := beam.NewPipelineWithRoot()
			keyed := beam.ParDo(s, &hostileElementFn{}, beam.Create(s, in...))
			runinference.RunInferenceKeyed(s, spec, keyed, hostileOptions()...)
			err := ptest.Run(p)
			if err == nil {
				t.Fatal("the pipeline succeeded")
			}
			if want := fmt.Sprintf("with key %d", hostile); !strings.Contains(err.Error(), want) {
				t.Errorf("error does not say %q: %v", want, err)
			}
		})
	}
}

// hostileElementFn turns an id into KV<id, Example>.
type hostileElementFn struct{}

func (*hostileElementFn) ProcessElement(id int) (int, inference.Example) {
	return id, hostileElement(id)
}

func init() {
	register.DoFn1x2[int, int, inference.Example](&hostileElementFn{})
}
