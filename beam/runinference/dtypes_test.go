package runinference_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/beamml/beamml/beam/runinference"
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/testing/stub"
)

func init() {
	register.Function1x1(describeTyped)
	register.Function1x1(describeTypedFailure)
}

// typedModel takes a string column and a float64 pair and makes an output
// of every element type (stub.Shaped: row r's outputs are built from the
// sum of its inputs, a string counting as its length).
func typedModel(name string) inference.Spec {
	ports := []stub.Port{stub.Input("category", inference.String, -1, 1), stub.Input("amount", inference.Float64, -1, 2)}
	for _, d := range inference.DTypes() {
		ports = append(ports, stub.Output("out_"+d.String(), d, -1, 2))
	}
	return stub.Tag(stub.Shaped(ports...), name)
}

func typedRow(t *testing.T, category string, amount ...float64) inference.Example {
	t.Helper()
	c, err := inference.New([]int{1}, []string{category})
	if err != nil {
		t.Fatal(err)
	}
	a, err := inference.New([]int{len(amount)}, amount)
	if err != nil {
		t.Fatal(err)
	}
	return inference.Example{"category": c, "amount": a}
}

// describeTyped prints the example's string and each output's type and
// values, in the order of inference.DTypes.
func describeTyped(r runinference.PredictionResult) string {
	category, _ := inference.Data[string](r.Example["category"])
	var b strings.Builder
	fmt.Fprintf(&b, "%q:", category)
	for _, d := range inference.DTypes() {
		o := r.Outputs.Get("out_" + d.String())
		fmt.Fprintf(&b, " %v%v", o, o.Values())
	}
	return b.String()
}

func describeTypedFailure(f runinference.Failure) string {
	return fmt.Sprintf("%s %s: %s", f.Stage, f.Kind, f.Err)
}

// Examples of strings and float64s go through RunInference and come back,
// with outputs of every element type, through the runner's coders; an
// example of the wrong element type is a failure that names it.
func TestEveryElementTypeInAPipeline(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	bad := typedRow(t, "x", 1, 2)
	bad["amount"], _ = inference.New([]int{2}, []float32{1, 2})
	col := beam.CreateList(s, []inference.Example{typedRow(t, "né", 1.5, 0.25), typedRow(t, "", 3, 4), bad})
	results, failures := runinference.RunInferenceWithFailures(s, typedModel(t.Name()), col, runinference.MaxBatchSize(2))
	// Row sums: 3 (the length of "né" in bytes) + 1.75, and 0 + 7.
	passert.Equals(s, beam.ParDo(s, describeTyped, results),
		`["né"]: float32[2][4.75 5.75] int64[2][4 5] int32[2][4 5] bool[2][false true] uint8[2][4 5] float16[2][4.75 5.75] `+
			`float64[2][4.75 5.75] string[2][4 5] int8[2][4 5] int16[2][4 5] uint16[2][4 5] uint32[2][4 5] uint64[2][4 5] bfloat16[2][4.75 5.75]`,
		`[""]: float32[2][7 8] int64[2][7 8] int32[2][7 8] bool[2][true false] uint8[2][7 8] float16[2][7 8] `+
			`float64[2][7 8] string[2][7 8] int8[2][7 8] int16[2][7 8] uint16[2][7 8] uint32[2][7 8] uint64[2][7 8] bfloat16[2][7 8]`)
	passert.Equals(s, beam.ParDo(s, describeTypedFailure, failures),
		`input element_type: inference: input "amount": element type float32, want float64: inference: element type mismatch`)
	ptest.RunAndValidate(t, p)
}
