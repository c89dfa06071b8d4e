package runinference_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/beamml/beamml/beam/runinference"
	"github.com/beamml/beamml/inference"
)

func tensor[T inference.Element](t *testing.T, data ...T) inference.Tensor {
	t.Helper()
	tn, err := inference.New([]int{len(data)}, data)
	if err != nil {
		t.Fatal(err)
	}
	return tn
}

func TestOutputOfOneOutputModel(t *testing.T) {
	r := runinference.PredictionResult{
		Outputs: inference.OutputsOf(map[string]inference.Tensor{"logits": tensor[float32](t, 0.25, 0.75)}),
		ModelID: inference.ModelID{URI: "model.onnx", Instance: "1"},
	}
	out, err := r.Output()
	if err != nil {
		t.Fatal(err)
	}
	if !inference.Equal(out, r.Outputs.Get("logits")) {
		t.Errorf("Output() = %v, want the output logits", out)
	}
	for _, name := range []string{"", "logits"} {
		d, err := runinference.OutputData[float32](r, name)
		if err != nil || !slices.Equal(d, []float32{0.25, 0.75}) {
			t.Errorf("OutputData[float32](r, %q) = %v, %v; want [0.25 0.75]", name, d, err)
		}
	}
}

func TestOutputFails(t *testing.T) {
	two := runinference.PredictionResult{
		Outputs: inference.OutputsOf(map[string]inference.Tensor{"scores": tensor[float32](t, 0.5), "labels": tensor[int64](t, 3)}),
		ModelID: inference.ModelID{URI: "model.onnx", Instance: "1"},
	}
	none := runinference.PredictionResult{}
	one := runinference.PredictionResult{Outputs: inference.OutputsOf(map[string]inference.Tensor{"y": tensor[float32](t, 1, 2)})}

	checkErr := func(what string, err, target error, want string) {
		t.Helper()
		if !errors.Is(err, target) || err.Error() != want {
			t.Errorf("%s: error\n%v\nwant\n%s\n(wrapping %v)", what, err, want, target)
		}
	}
	_, err := two.Output()
	checkErr("two outputs", err, inference.ErrMissingOutput,
		"runinference: the result of model model.onnx has 2 outputs [labels scores], want exactly one for Output; name the one wanted: inference: missing output")
	_, err = runinference.OutputData[float32](two, "")
	checkErr(`two outputs, name ""`, err, inference.ErrMissingOutput,
		"runinference: the result of model model.onnx has 2 outputs [labels scores], want exactly one for Output; name the one wanted: inference: missing output")
	_, err = none.Output()
	checkErr("no output", err, inference.ErrMissingOutput,
		"runinference: the result has 0 outputs [], want exactly one for Output; name the one wanted: inference: missing output")
	_, err = runinference.OutputData[float32](two, "logits")
	checkErr("unknown name", err, inference.ErrMissingOutput,
		`runinference: the result of model model.onnx has no output "logits", its outputs are [labels scores]: inference: missing output`)
	_, err = runinference.OutputData[float32](two, "labels")
	checkErr("wrong type", err, inference.ErrType,
		`runinference: output "labels" of the result of model model.onnx: inference: tensor int64[1] read as float32: inference: element type mismatch`)
	_, err = runinference.OutputData[int64](one, "")
	checkErr("wrong type of the one output", err, inference.ErrType,
		`runinference: output "y" of the result: inference: tensor float32[2] read as int64: inference: element type mismatch`)

	// What Outputs[""] used to give: the zero tensor, read as "DType(0)[]".
	if _, err := runinference.OutputData[float32](none, ""); err == nil || strings.Contains(err.Error(), "DType(0)") {
		t.Errorf("OutputData of a result without outputs: error %v, want a missing output", err)
	}
}
