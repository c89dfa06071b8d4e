package runinference_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"

	"github.com/beamml/beamml/beam/runinference"
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/testing/stub"
)

func init() {
	register.Function1x0(printResult)
	register.Function1x0(printFailure)
	register.Function2x0(printKeyed)
	register.Function1x2(keyByID)
	register.Function1x0(printLabel)
	register.DoFn2x0[int64, func(runinference.ModelMetadata)](&updateOnTick{})
}

func printResult(r runinference.PredictionResult) {
	x, _ := inference.Data[float32](r.Example["x"])
	y, _ := inference.Data[float32](r.Outputs.Get("y"))
	fmt.Println(x, "->", y)
}

func printFailure(f runinference.Failure) {
	x, _ := inference.Data[float32](f.Example["x"])
	fmt.Println(x, "failed at stage", f.Stage, "with kind", f.Kind)
}

// examplesOf makes one example per row: the model's input "x" without the
// batch dimension.
func examplesOf(rows ...[]float32) []inference.Example {
	var examples []inference.Example
	for _, x := range rows {
		t, err := inference.New([]int{len(x)}, x)
		if err != nil {
			panic(err)
		}
		examples = append(examples, inference.Example{"x": t})
	}
	return examples
}

// A pipeline that runs a model over three examples. A real pipeline names an
// ONNX model instead of the stub, reads its examples from a source, and
// writes the results to a sink.
func ExampleRunInference() {
	p, s := beam.NewPipelineWithRoot()

	// Each example holds the model's input "x" without the batch dimension.
	examples := examplesOf([]float32{1, 2}, []float32{3, 4}, []float32{5, 6})

	// y = x·Wᵀ + b with W = [[1 1] [0 2]] and b = [0 1].
	model := stub.Affine([][]float32{{1, 1}, {0, 2}}, []float32{0, 1})
	results := runinference.RunInference(s, model, beam.CreateList(s, examples),
		runinference.MaxBatchSize(64), runinference.Device(inference.CPU))
	beam.ParDo0(s, printResult, results)

	if err := ptest.Run(p); err != nil {
		panic(err)
	}
	// Unordered output:
	// [1 2] -> [3 5]
	// [3 4] -> [7 9]
	// [5 6] -> [11 13]
}

// A pipeline whose model fails on one element: that element goes to the
// failures output with the stage it failed at, and every other element
// gets its result. Nothing is lost, and the job succeeds; write the
// failures to a sink of their own (a dead-letter table or file).
func ExampleRunInferenceWithFailures() {
	p, s := beam.NewPipelineWithRoot()
	examples := examplesOf([]float32{1, 2}, []float32{-1, 0}, []float32{5, 6})

	// The stub model fails any batch holding a row that starts with -1, as
	// a real model fails on a malformed element. RunInference splits the
	// failed batch until the bad element is alone.
	model := stub.WithFailures(stub.Affine([][]float32{{1, 1}, {0, 2}}, []float32{0, 1}), -1)
	results, failures := runinference.RunInferenceWithFailures(s, model, beam.CreateList(s, examples),
		runinference.MaxBatchSize(64), runinference.Device(inference.CPU))
	beam.ParDo0(s, printResult, results)
	beam.ParDo0(s, printFailure, failures)

	if err := ptest.Run(p); err != nil {
		panic(err)
	}
	// Unordered output:
	// [1 2] -> [3 5]
	// [5 6] -> [11 13]
	// [-1 0] failed at stage inference with kind other
}

// record is an input row with the id that identifies it downstream.
type record struct {
	ID string
	X  []float32
}

func keyByID(r record) (string, inference.Example) {
	t, err := inference.New([]int{len(r.X)}, r.X)
	if err != nil {
		panic(err)
	}
	return r.ID, inference.Example{"x": t}
}

func printKeyed(id string, r runinference.PredictionResult) {
	y, _ := inference.Data[float32](r.Outputs.Get("y"))
	fmt.Println(id, "->", y)
}

// The keyed variant carries a key through the model, such as the id of the
// row an example came from, so that a result can be joined back to its
// record: KV<K, Example> in, KV<K, PredictionResult> out. Real pipelines
// use RunInferenceKeyedWithFailures, whose failures are keyed the same way.
func ExampleRunInferenceKeyed() {
	p, s := beam.NewPipelineWithRoot()
	rows := beam.CreateList(s, []record{{"a", []float32{1, 2}}, {"b", []float32{3, 4}}})
	keyed := beam.ParDo(s, keyByID, rows)

	model := stub.Affine([][]float32{{1, 1}, {0, 2}}, []float32{0, 1})
	results := runinference.RunInferenceKeyed(s, model, keyed, runinference.Device(inference.CPU))
	beam.ParDo0(s, printKeyed, results)

	if err := ptest.Run(p); err != nil {
		panic(err)
	}
	// Unordered output:
	// a -> [3 5]
	// b -> [7 9]
}

func printLabel(r runinference.PredictionResult) {
	// "" is the one output of a one-output model, whatever its name.
	scores, err := runinference.OutputData[float32](r, "")
	if err != nil {
		panic(err) // a real DoFn returns the error
	}
	x, _ := inference.Data[float32](r.Example["x"])
	fmt.Println(x, "-> label", slices.Index(scores, slices.Max(scores)))
}

// OutputData reads a result's output as a Go slice of its element type,
// here the one output of the model, without naming it; a DoFn after
// RunInference turns it into what the pipeline writes.
func ExampleOutputData() {
	p, s := beam.NewPipelineWithRoot()
	examples := examplesOf([]float32{0.1, 0.9}, []float32{0.7, 0.2})

	// The echo model returns its input as its one output, "y": scores
	// over two labels.
	results := runinference.RunInference(s, stub.Echo(2), beam.CreateList(s, examples))
	beam.ParDo0(s, printLabel, results)

	if err := ptest.Run(p); err != nil {
		panic(err)
	}
	// Unordered output:
	// [0.1 0.9] -> label 1
	// [0.7 0.2] -> label 0
}

// Output gives the one output of a one-output model. Asked of a result
// with several outputs, it fails with an error wrapping
// inference.ErrMissingOutput that names them: read those by name.
func ExamplePredictionResult_Output() {
	scores, _ := inference.New([]int{2}, []float32{0.25, 0.75})
	labels, _ := inference.New([]int{1}, []int64{1})

	one := runinference.PredictionResult{Outputs: inference.OutputsOf(map[string]inference.Tensor{"probabilities": scores})}
	out, err := one.Output()
	fmt.Println(out, err)

	two := runinference.PredictionResult{Outputs: inference.OutputsOf(map[string]inference.Tensor{"probabilities": scores, "label": labels})}
	_, err = two.Output()
	fmt.Println(errors.Is(err, inference.ErrMissingOutput), err)
	label, err := runinference.OutputData[int64](two, "label")
	fmt.Println(label, err)
	// Output:
	// float32[2] <nil>
	// true runinference: the result has 2 outputs [label probabilities], want exactly one for Output; name the one wanted: inference: missing output
	// [1] <nil>
}

// A systematic mistake, such as int64 examples for a model that takes
// float32, fails every element. With MaxFailureRate the job fails, with a
// summary of the failures by kind, instead of passing with every element
// in the failures output.
func ExampleMaxFailureRate() {
	p, s := beam.NewPipelineWithRoot()
	var examples []inference.Example
	for i := range 20 {
		x, _ := inference.New([]int{2}, []int64{int64(i), 0})
		examples = append(examples, inference.Example{"x": x})
	}
	runinference.RunInferenceWithFailures(s, stub.Echo(2), beam.CreateList(s, examples),
		runinference.MaxFailureRate(0.05, 10))

	err := ptest.Run(p)
	// The runner's error holds the bundle's plan; the summary is a line of
	// its own.
	for _, line := range strings.Split(err.Error(), "\n") {
		if strings.HasPrefix(line, "RunInference:") {
			fmt.Println(line)
		}
	}
	// Output:
	// RunInference: 10 of 10 elements failed, a fraction of 1 over MaxFailureRate(0.05, 10), model stub:stub://echo/2 on auto; by kind: element_type: 10 (first: inference: input "x": element type int64, want float32: inference: element type mismatch)
}

// updateOnTick turns a tick into the update it names.
type updateOnTick struct{ ID, URI string }

func (u updateOnTick) ProcessElement(_ int64, emit func(runinference.ModelMetadata)) {
	emit(runinference.ModelMetadata{ID: u.ID, URI: u.URI})
}

// A streaming pipeline whose model is replaced while it runs. The update
// is one ModelMetadata, made from one tick of periodic.Sequence at the time
// the new model should take over; any PCollection<ModelMetadata> will do
// (WatchFilePattern makes one from the files of a folder, a Pub/Sub
// subscription another). Each result names the model that scored it, and
// the pipeline ends when its sources do.
func ExampleWithModelUpdates() {
	p, s := beam.NewPipelineWithRoot()
	start := time.Now()

	// A row every 50ms for three seconds.
	ticks := periodic.Sequence(s, beam.Create(s, periodic.NewSequenceDefinition(start, start.Add(3*time.Second), 50*time.Millisecond)))
	rows := beam.ParDo(s, rowOfTick, ticks)

	// One update, a second and a half in: from then on, v2 scores the rows.
	at := start.Add(1500 * time.Millisecond)
	tick := periodic.Sequence(s, beam.Create(s, periodic.NewSequenceDefinition(at, at.Add(time.Second), time.Second)))
	updates := beam.ParDo(s, updateOnTick{ID: "v2", URI: "stub://echo/2/v2"}, tick)

	results := runinference.RunInference(s, stub.Tag(stub.Echo(2), "ExampleWithModelUpdates"), rows,
		runinference.ModelName("v1"), runinference.WithModelUpdates(updates))
	beam.ParDo0(s, seeModel{Run: "ExampleWithModelUpdates"}, results)

	// Model updates need state and timers: prism has them, Go's direct runner not.
	if _, err := beam.Run(context.Background(), "prism", p); err != nil {
		panic(err)
	}
	byModel := modelsSeen("ExampleWithModelUpdates")
	fmt.Println("rows scored:", byModel["v1"]+byModel["v2"])
	fmt.Println("by v1:", byModel["v1"] > 0, "by v2:", byModel["v2"] > 0)
	// Output:
	// rows scored: 60
	// by v1: true by v2: true
}
