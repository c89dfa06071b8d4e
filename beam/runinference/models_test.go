package runinference_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/beamml/beamml/beam/runinference"
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/testing/stub"
)

func init() {
	register.Function1x2(keyByName)
}

// keyByName keys [k, v] by "m<k>".
func keyByName(ex inference.Example) (string, inference.Example) {
	return fmt.Sprintf("m%d", int(values(ex["x"])[0])), ex
}

// Three models by key, at most two loaded: every element runs on its key's
// model, and the third model's loads evict the least recently used.
func TestModelsByKeyWithMaxModelsPerWorker(t *testing.T) {
	// Model k adds k to x[1]: y = [x0, x1 + k].
	model := func(k float32) inference.Spec {
		return stub.Tag(stub.Affine([][]float32{{1, 0}, {0, 1}}, []float32{0, k}), fmt.Sprint(t.Name(), k))
	}
	var in []inference.Example
	var want []any
	for i := range 60 {
		k := float32(i % 3)
		in = append(in, row(k, float32(i)))
		want = append(want, fmt.Sprintf("m%d: %v -> %v", int(k), []float32{k, float32(i)}, []float32{k, float32(i) + k}))
	}
	p, s := beam.NewPipelineWithRoot()
	col := beam.ParDo(s, keyByName, beam.CreateList(s, in))
	results := runinference.RunInferenceKeyed(s, inference.Spec{}, col, runinference.MaxBatchSize(4),
		runinference.ModelsByKey(
			runinference.KeyModelMapping{Keys: []string{"m0"}, Spec: model(0)},
			runinference.KeyModelMapping{Keys: []string{"m1"}, Spec: model(1)},
			runinference.KeyModelMapping{Keys: []string{"m2"}, Spec: model(2)}),
		runinference.MaxModelsPerWorker(2))
	passert.Equals(s, beam.ParDo(s, formatKeyed, results), want...)
	pr := ptest.RunAndValidate(t, p)
	// Unnamed, with one base name: their metrics are told apart by a hash.
	perModel := map[string]int64{}
	for _, c := range pr.Metrics().Query(func(r metrics.SingleResult) bool {
		return r.Namespace() == runinference.Namespace && strings.HasPrefix(r.Name(), "2x2-") && strings.HasSuffix(r.Name(), "_num_inferences")
	}).Counters() {
		perModel[c.Name()] += c.Result()
	}
	if len(perModel) != 3 {
		t.Errorf("per-model counters %v: want three, named 2x2-<hash>_num_inferences, of 20 each", perModel)
	}
	for name, n := range perModel {
		if n != 20 {
			t.Errorf("%s = %d, want 20", name, n)
		}
	}
	loads, evictions := counter(t, pr, "model_loads"), counter(t, pr, "model_evictions")
	if evictions == 0 || loads != evictions+2 && loads != evictions+1 {
		t.Errorf("model_loads %d, model_evictions %d: want evictions, and loads = evictions + the models left loaded (at most 2)", loads, evictions)
	}
}

// A key no mapping names fails, with the key in the error, when the
// transform has no spec of its own; with one, it runs on that spec.
func TestModelsByKeyUnmappedKey(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	col := beam.ParDo(s, keyByName, beam.CreateList(s, []inference.Example{row(0, 1), row(5, 2)}))
	results, failures := runinference.RunInferenceKeyedWithFailures(s, inference.Spec{}, col,
		runinference.ModelsByKey(runinference.KeyModelMapping{Keys: []string{"m0"}, Spec: stub.Echo(2)}))
	passert.Equals(s, beam.ParDo(s, formatKeyed, results), "m0: [0 1] -> [0 1]")
	passert.Equals(s, beam.ParDo(s, describeKeyedFailure, failures),
		`m5: [5 2] at input (other): no model for key "m5": ModelsByKey maps 1 keys, and the transform has no spec of its own (model false)`)
	withDefault := runinference.RunInferenceKeyed(s, stub.Affine([][]float32{{1, 0}, {0, 1}}, []float32{0, 100}), col,
		runinference.ModelsByKey(runinference.KeyModelMapping{Keys: []string{"m0"}, Spec: stub.Echo(2)}))
	passert.Equals(s, beam.ParDo(s, formatKeyed, withDefault), "m0: [0 1] -> [0 1]", "m5: [5 2] -> [5 102]")
	ptest.RunAndValidate(t, p)
}

func TestModelsByKeyOptionsValidated(t *testing.T) {
	for _, tc := range []struct {
		opts []runinference.Option
		want string
	}{
		{[]runinference.Option{runinference.ModelsByKey()}, "ModelsByKey(): no mappings"},
		{[]runinference.Option{runinference.ModelsByKey(runinference.KeyModelMapping{Spec: stub.Echo(2)})}, "has no keys"},
		{[]runinference.Option{runinference.ModelsByKey(runinference.KeyModelMapping{Keys: []string{"a"}, Spec: stub.Echo(2)},
			runinference.KeyModelMapping{Keys: []string{"a"}, Spec: stub.Echo(3)})}, `key "a" is mapped twice`},
		{[]runinference.Option{runinference.ModelsByKey(runinference.KeyModelMapping{Keys: []string{"a"}})}, "mapping 0"},
		{[]runinference.Option{runinference.MaxModelsPerWorker(0)}, "MaxModelsPerWorker(0): must be positive"},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !contains(fmt.Sprint(r), tc.want) {
					t.Errorf("recovered %v, want a panic with %q", r, tc.want)
				}
			}()
			_, s := beam.NewPipelineWithRoot()
			col := beam.ParDo(s, keyByName, beam.CreateList(s, []inference.Example{row(1, 2)}))
			runinference.RunInferenceKeyed(s, stub.Echo(2), col, tc.opts...)
		}()
	}
}

// ModelsByKey and WithModelUpdates together are refused at construction,
// naming both: an update replaces the transform's one model, and would
// leave the keys' mappings silently unused.
func TestModelsByKeyWithModelUpdatesRefused(t *testing.T) {
	defer func() {
		r := fmt.Sprint(recover())
		if !contains(r, "ModelsByKey") || !contains(r, "WithModelUpdates") {
			t.Errorf("recovered %q, want a panic naming ModelsByKey and WithModelUpdates", r)
		}
	}()
	_, s := beam.NewPipelineWithRoot()
	col := beam.ParDo(s, keyByName, beam.CreateList(s, []inference.Example{row(1, 2)}))
	updates := beam.Create(s, runinference.ModelMetadata{ID: "v2", URI: "v2.onnx"})
	runinference.RunInferenceKeyed(s, stub.Echo(2), col, runinference.WithModelUpdates(updates),
		runinference.ModelsByKey(runinference.KeyModelMapping{Keys: []string{"m1"}, Spec: stub.Echo(2)}))
}
