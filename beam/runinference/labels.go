package runinference

import (
	"context"
	"fmt"
	"slices"

	"github.com/beamml/beamml/inference"
)

// A classifier exported from scikit-learn, XGBoost or LightGBM gives its
// class probabilities as a sequence of maps from class label to
// probability (ONNX's ZipMap; the output scikit-learn names
// "output_probability"). A Tensor holds no maps: the output is the row's
// probabilities, a float32 tensor of one value per class, in the order of
// the model's class labels (inference.TensorInfo.Labels, which
// onnx.Describe and cmd/beamml-inspect report). OutputLabels reads those
// labels, and ScoresByLabel makes the map of one result.

// OutputLabels returns the class labels of output of spec's model, in the
// order of the output's values (an integer label in decimal): nil for an
// output without labels. It loads the model through the process's shared
// cache, where RunInference keeps it, so that a DoFn's Setup can call it
// and find the model already loaded. It fails when the model does not load
// or has no output of that name.
func OutputLabels(ctx context.Context, spec inference.Spec, output string) ([]string, error) {
	h, err := inference.Acquire(ctx, spec)
	if err != nil {
		return nil, err
	}
	defer h.Release()
	var names []string
	for _, o := range h.Model().Outputs() {
		if o.Name == output {
			return slices.Clone(o.Labels), nil
		}
		names = append(names, o.Name)
	}
	return nil, fmt.Errorf("runinference: model %s has no output %q, its outputs are %v: %w", spec.URI, output, names, inference.ErrMissingOutput)
}

// ScoresByLabel returns the values of output of r by class label: labels
// are the output's (OutputLabels), one per value. It fails with
// inference.ErrMissingOutput when r has no such output, ErrType when it is
// not float32, and ErrShape when it does not hold one value per label.
func ScoresByLabel(r PredictionResult, output string, labels []string) (map[string]float32, error) {
	scores, err := OutputData[float32](r, output)
	if err != nil {
		return nil, err
	}
	if len(scores) != len(labels) {
		return nil, fmt.Errorf("runinference: %s output %q has %d values for %d labels: %w", r.what(), output, len(scores), len(labels), inference.ErrShape)
	}
	m := make(map[string]float32, len(labels))
	for i, l := range labels {
		m[l] = scores[i]
	}
	return m, nil
}
