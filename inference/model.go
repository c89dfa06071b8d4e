package inference

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Dynamic marks a dimension of a TensorInfo shape whose size is given by the
// data, such as the batch dimension of a model exported with a dynamic axis.
const Dynamic = -1

// TensorInfo describes one input or output of a model. Shape[0] is the batch
// dimension: Dynamic for models that take any batch size, or a fixed size
// (1 for models exported without a dynamic batch axis).
type TensorInfo struct {
	Name  string
	DType DType
	Shape []int
	// Labels name the positions along the last axis of an output that the
	// model gives as a map from class label to score: a scikit-learn or
	// XGBoost classifier's "output_probability", a ZipMap in ONNX, whose
	// sequence of maps the runtime returns as a [rows, classes] tensor of
	// the scores, Labels[j] the class of column j (an integer label in
	// decimal). Nil for other outputs and for inputs.
	Labels []string
}

func (i TensorInfo) String() string {
	return fmt.Sprintf("%s %v%v", i.Name, i.DType, i.Shape)
}

// Model is a loaded model. Implementations must be safe for concurrent Run
// calls: the shared cache hands one Model to every bundle in the process.
type Model interface {
	// Inputs describes the inputs Run wants, in the model's order.
	Inputs() []TensorInfo
	// Outputs describes the outputs Run returns, in the model's order.
	Outputs() []TensorInfo
	// Run executes one batch. Every input tensor carries the batch along
	// axis 0, and so does every output it returns.
	Run(ctx context.Context, inputs map[string]Tensor) (map[string]Tensor, error)
	// ByteSize is the memory the loaded model holds (weights and constants),
	// in bytes.
	ByteSize() int64
	// Close releases the model's memory. The cache calls it once, after the
	// last reference is released.
	Close() error
}

// BatchLimiter is a Model whose largest batch is bounded by the memory of
// its device. MaxBatch returns the largest batch size whose working memory
// fits in what the device has free (with headroom), or 0 when it sets no
// bound. RunInference caps its MaxBatchSize at it.
type BatchLimiter interface {
	MaxBatch() int
}

// Device names where a model runs.
type Device string

const (
	// Auto picks CUDA where a CUDA backend is registered in this binary and a
	// device answers, and CPU otherwise.
	Auto Device = "auto"
	// CPU runs on the host, in pure Go.
	CPU Device = "cpu"
	// CUDA runs on an NVIDIA GPU. It needs a binary built with the cuda tag.
	CUDA Device = "cuda"
)

// Spec is the serializable description of a model: what a DoFn carries to
// the workers instead of a live model. Two Specs that are equal load one
// model per process.
type Spec struct {
	// URI locates the model file: a local path, or any URI that the
	// format's loader reads (gs:// on Dataflow for onnx).
	URI string `json:"uri"`
	// Format names the registered Loader: "onnx", "stub".
	Format string `json:"format"`
	// Device is where the model runs; empty means Auto.
	Device Device `json:"device,omitempty"`
	// Options are format-specific settings, passed to the Loader.
	Options map[string]string `json:"options,omitempty"`
}

// Validate reports a Spec that cannot name a model: no format, no URI.
func (s Spec) Validate() error {
	switch {
	case s.Format == "":
		return fmt.Errorf("inference: spec %v has no format", s)
	case s.URI == "":
		return fmt.Errorf("inference: spec %v has no URI", s)
	}
	return nil
}

// WithDevice returns a copy of s that runs on d.
func (s Spec) WithDevice(d Device) Spec {
	s.Device = d
	return s
}

// device returns the device with the empty value read as Auto.
func (s Spec) device() Device {
	if s.Device == "" {
		return Auto
	}
	return s.Device
}

// Key is the canonical text of the spec, the shared cache's key: equal
// Specs, options in any order, give equal keys.
func (s Spec) Key() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%q|%q|%q", s.Format, s.URI, s.device())
	for _, k := range slices.Sorted(maps.Keys(s.Options)) {
		fmt.Fprintf(&b, "|%q=%q", k, s.Options[k])
	}
	return b.String()
}

// String is the spec as a person reads it: "onnx:gs://bucket/m.onnx on auto".
func (s Spec) String() string {
	return fmt.Sprintf("%s:%s on %s", s.Format, s.URI, s.device())
}

// ModelID identifies one loaded instance of a model: the URI it came from and
// a random UUID drawn when it was loaded. Results carry it, so outputs from
// a reloaded or updated model can be told apart.
type ModelID struct {
	URI      string
	Instance string
	// Name is the pipeline's own name for the model, where it gave one
	// (runinference's ModelMetadata.ID); empty otherwise.
	Name string
}

func (id ModelID) String() string { return id.URI + "@" + id.Instance }
