package runinference

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/testing/stub"
)

// keyedRunner drives one keyedFn through bundles, as bundleRunner does an
// inferFn.
type keyedRunner struct {
	fn   *keyedFn
	emit func(beam.EventTime, beam.X, PredictionResult)
	fail func(beam.EventTime, beam.X, Failure)
}

type keyedExample struct {
	key string
	ex  inference.Example
}

func (r *keyedRunner) bundle(ctx context.Context, elems []keyedExample) error {
	if err := r.fn.StartBundle(ctx, r.emit, r.fail); err != nil {
		return err
	}
	for _, e := range elems {
		if err := r.fn.ProcessElement(ctx, window.GlobalWindow{}, 0, e.key, e.ex, r.emit, r.fail); err != nil {
			return err
		}
	}
	return r.fn.FinishBundle(ctx, r.emit, r.fail)
}

func newKeyedRunner(t *testing.T, spec inference.Spec, withFailures bool, opts ...Option) *keyedRunner {
	t.Helper()
	spec, c := newConfig(spec, opts)
	r := &keyedRunner{fn: &keyedFn{batcher{Spec: spec, Config: c, Failures: withFailures}},
		emit: func(beam.EventTime, beam.X, PredictionResult) {},
		fail: func(_ beam.EventTime, _ beam.X, f Failure) { t.Errorf("failure: %v", f) }}
	if err := r.fn.Setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.fn.Teardown)
	return r
}

// An element that fails on the model its key maps to fails the bundle with
// an error naming that model, not the transform's own; with a failures
// output, its Failure carries that model's ModelID.
func TestFailureNamesTheModelThatRan(t *testing.T) {
	own := stub.Tag(stub.Affine([][]float32{{1, 0}, {0, 1}}, []float32{0, 0}), t.Name()+"-own")
	mapped := stub.Tag(stub.WithFailures(stub.Echo(2), 7), t.Name()+"-mapped")
	opts := []Option{ModelsByKey(KeyModelMapping{Keys: []string{"k"}, Spec: mapped})}

	r := newKeyedRunner(t, own, false, opts...)
	err := r.bundle(context.Background(), []keyedExample{{"k", example(7, 1)}})
	if err == nil || !strings.Contains(err.Error(), "model "+mapped.String()) || strings.Contains(err.Error(), own.URI) {
		t.Errorf("bundle error %v: want it to name the model that ran, %v, and not the transform's, %v", err, mapped, own)
	}

	r = newKeyedRunner(t, own, true, opts...)
	var got []Failure
	r.fail = func(_ beam.EventTime, _ beam.X, f Failure) { got = append(got, f) }
	if err := r.bundle(context.Background(), []keyedExample{{"k", example(7, 1)}}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ModelID.URI != mapped.URI {
		t.Errorf("failures %v: want one, from %s", got, mapped.URI)
	}
}

// TargetBatchLatency sizes the batches of every model from that model's own
// latencies: with ModelsByKey, each mapped model's batches grow from
// MinBatchSize to the size that takes the target for it, elements of both
// keys interleaved: 2ms + 0.5ms per row reaches 20ms at 36 rows, 2ms + 1ms
// per row at 18.
func TestTargetBatchLatencyPerModel(t *testing.T) {
	fast := stub.WithRecording(stub.Tag(stub.WithLatency(stub.Echo(2), 2*time.Millisecond, 500*time.Microsecond), t.Name()+"-fast"))
	slow := stub.WithRecording(stub.Tag(stub.WithLatency(stub.Echo(2), 2*time.Millisecond, time.Millisecond), t.Name()+"-slow"))
	r := newKeyedRunner(t, inference.Spec{}, false, MinBatchSize(1), MaxBatchSize(64), TargetBatchLatency(20*time.Millisecond),
		ModelsByKey(KeyModelMapping{Keys: []string{"fast"}, Spec: fast}, KeyModelMapping{Keys: []string{"slow"}, Spec: slow}))
	ctx := context.Background()
	for b := range 3 {
		elems := make([]keyedExample, 600)
		for i := range elems {
			elems[i] = keyedExample{[]string{"fast", "slow"}[i%2], example(float32(b*600+i), 0)}
		}
		if err := r.bundle(ctx, elems); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []struct {
		spec   inference.Spec
		lo, hi int
	}{{fast, 27, 40}, {slow, 13, 21}} {
		sizes := batchSizes(t, m.spec)
		t.Logf("%s: batch sizes %v", m.spec.Options["tag"], sizes)
		if len(sizes) < 12 || sizes[0] != 1 {
			t.Fatalf("batch sizes %v: want the first of MinBatchSize, 1, and a dozen more", sizes)
		}
		if md := median(sizes[len(sizes)-12 : len(sizes)-1]); md < m.lo || md > m.hi {
			t.Errorf("median of the last batches is %d, want %d to %d", md, m.lo, m.hi)
		}
	}
}

// TargetBatchLatency with WithModelUpdates: each model a shard serves has
// its own sizer. After the update the new model's batches start again at
// MinBatchSize, and a late batch of the old model (a shard that has not
// taken the update yet) runs at the old model's size, not from scratch.
func TestTargetBatchLatencyPerUpdate(t *testing.T) {
	v1 := stub.WithRecording(stub.Tag(stub.WithLatency(stub.Echo(2), 2*time.Millisecond, 500*time.Microsecond), t.Name()))
	v2 := v1
	v2.URI += "/v2"
	c := config{MinBatchSize: 1, MaxBatchSize: 64, TargetBatchLatency: 20 * time.Millisecond, Updates: true, Source: updatedModels, PoolID: t.Name()}
	b := &batcher{Spec: v1, Config: c}
	ctx := context.Background()
	if err := b.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	defer b.Teardown()
	out := sink{result: func(*element, PredictionResult) {},
		failure: func(_ *element, f Failure) { t.Errorf("failure: %v", f) }}
	if err := b.startBundle(ctx); err != nil {
		t.Fatal(err)
	}
	var v1Batches int
	for i, phase := range []struct {
		md ModelMetadata
		n  int
	}{{ModelMetadata{}, 1000}, {ModelMetadata{ID: "v2", URI: v2.URI}, 1000}, {ModelMetadata{}, 200}} {
		md := phase.md
		for j := range phase.n {
			e := element{window: window.GlobalWindow{}, example: example(float32(i*1000+j), 0), update: &md}
			if err := b.add(ctx, e, out); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.runGroups(ctx, out); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			v1Batches = len(batchSizes(t, v1))
		}
	}
	sizes1, sizes2 := batchSizes(t, v1), batchSizes(t, v2)
	t.Logf("v1: batch sizes %v", sizes1)
	t.Logf("v2: batch sizes %v", sizes2)
	if len(sizes2) < 12 || sizes2[0] != 1 {
		t.Fatalf("v2's batch sizes %v: want the first of MinBatchSize, 1, and a dozen more", sizes2)
	}
	if md := median(sizes2[len(sizes2)-12 : len(sizes2)-1]); md < 27 || md > 40 {
		t.Errorf("median of v2's last batches is %d, want about 36 (27 to 40)", md)
	}
	if late := sizes1[v1Batches]; late < 27 {
		t.Errorf("v1's first batch after v2's ran %d rows: want v1's own size, about 36, not a sizer started afresh", late)
	}
}

// batchSizes are the sizes of the batches spec's recording stub ran.
func batchSizes(t *testing.T, spec inference.Spec) []int {
	t.Helper()
	h, err := inference.Acquire(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	var sizes []int
	for _, b := range h.Model().(*stub.Model).Batches() {
		sizes = append(sizes, len(b))
	}
	return sizes
}

// Device and Precision reach every model a transform runs: each mapping's
// Spec with ModelsByKey, and each update's with WithModelUpdates.
func TestDeviceAndPrecisionReachEveryModel(t *testing.T) {
	opts := []Option{Device(inference.CPU), Precision(inference.TF32),
		ModelsByKey(KeyModelMapping{Keys: []string{"a"}, Spec: stub.Echo(2)}, KeyModelMapping{Keys: []string{"b"}, Spec: stub.Echo(3)})}
	spec, c := newConfig(stub.Echo(2), opts)
	b := &batcher{Spec: spec, Config: c}
	specs := []inference.Spec{spec, b.specOf(ModelMetadata{ID: "v2", URI: "stub://echo/4"})}
	for _, m := range c.Models {
		specs = append(specs, m.Spec)
	}
	for _, s := range specs {
		if p, err := s.Precision(); s.Device != inference.CPU || err != nil || p != inference.TF32 {
			t.Errorf("spec %v: device %q, precision %q (%v); want cpu and tf32", s, s.Device, p, err)
		}
	}
}
