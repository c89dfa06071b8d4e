package check

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/onnx"
)

// The exports the tests read are laid out as ONNX's backend tests are: a
// directory holding model.onnx and test_data_set_0 with input_<i>.pb and
// output_<i>.pb, the i-th graph input and output (the outputs PyTorch
// computed, for the exports of PyTorch models).

// Fataler is what the readers need of a test (testing.TB has it; this
// package stays free of package testing, which beamml-bench and the
// worker's self-check link).
type Fataler interface {
	Helper()
	Fatal(args ...any)
}

// DecodeExport decodes dir/model.onnx, failing t when it cannot.
func DecodeExport(t Fataler, dir string) *graph.Graph {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := onnx.Decode(data, dir)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// ExportData reads the inputs and the expected outputs of dir's data set,
// by the names of g's inputs and outputs.
func ExportData(t Fataler, dir string, g *graph.Graph) (feeds, want map[string]inference.Tensor) {
	t.Helper()
	read := func(file string) inference.Tensor {
		b, err := os.ReadFile(filepath.Join(dir, "test_data_set_0", file))
		if err != nil {
			t.Fatal(err)
		}
		_, x, err := onnx.ReadTensor(b)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	feeds, want = map[string]inference.Tensor{}, map[string]inference.Tensor{}
	for i, in := range g.Inputs {
		feeds[in.Name] = read(fmt.Sprintf("input_%d.pb", i))
	}
	for i, o := range g.Outputs {
		want[o.Name] = read(fmt.Sprintf("output_%d.pb", i))
	}
	return feeds, want
}
