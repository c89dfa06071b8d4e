package inference_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beamml/beamml/inference"
	_ "github.com/beamml/beamml/inference/cpu"
)

// cacheTestFormat names the test loader below. The Spec's options drive it:
//
//	"fail": "N"       the first N loads of the URI fail with ErrBadModel
//	"fail": "always"  every load of the URI fails
//	"panic": "1"      the loader panics
//	"nil": "1"        the loader returns neither a model nor an error
//
// and a test can hold its loads back with gate.
const cacheTestFormat = "cachetest"

func init() { inference.RegisterLoader(cacheTestFormat, loadCacheTestModel) }

// loads records what the test loader did, by URI. Every test uses URIs of
// its own (see newSpec), so tests do not see each other's loads.
var loads = struct {
	sync.Mutex
	calls  map[string]int
	models map[string][]*countingModel
	gates  map[string]chan struct{}
}{
	calls:  map[string]int{},
	models: map[string][]*countingModel{},
	gates:  map[string]chan struct{}{},
}

func loadCacheTestModel(ctx context.Context, spec inference.Spec, backend inference.Backend) (inference.Model, error) {
	loads.Lock()
	loads.calls[spec.URI]++
	call := loads.calls[spec.URI]
	gate, gated := loads.gates[spec.URI]
	loads.Unlock()

	if gated {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if spec.Options["panic"] != "" {
		panic("cachetest: told to panic")
	}
	if spec.Options["nil"] != "" {
		return nil, nil
	}
	if fail := spec.Options["fail"]; fail != "" {
		n, _ := strconv.Atoi(fail)
		if fail == "always" || call <= n {
			return nil, fmt.Errorf("cachetest: load %d of %s told to fail: %w", call, spec.URI, inference.ErrBadModel)
		}
	}
	m := &countingModel{device: backend.Device()}
	loads.Lock()
	loads.models[spec.URI] = append(loads.models[spec.URI], m)
	loads.Unlock()
	return m, nil
}

// countingModel is the test loader's model; it counts its Close calls.
type countingModel struct {
	device inference.Device // the backend it was loaded onto
	closes atomic.Int64
}

func (*countingModel) Inputs() []inference.TensorInfo {
	return []inference.TensorInfo{{Name: "x", DType: inference.Float32, Shape: []int{inference.Dynamic}}}
}

func (m *countingModel) Outputs() []inference.TensorInfo { return m.Inputs() }

func (*countingModel) Run(_ context.Context, inputs map[string]inference.Tensor) (map[string]inference.Tensor, error) {
	return inputs, nil
}

func (*countingModel) ByteSize() int64 { return 0 }

func (m *countingModel) Close() error {
	m.closes.Add(1)
	return nil
}

var specSeq atomic.Int64

// newSpec returns a Spec of the test format with a URI no other test, or
// earlier run of this one, uses. options are key, value pairs.
func newSpec(t *testing.T, options ...string) inference.Spec {
	t.Helper()
	if len(options)%2 != 0 {
		t.Fatalf("newSpec: options %q are not key, value pairs", options)
	}
	spec := inference.Spec{
		URI:    fmt.Sprintf("mem://%s/%d", t.Name(), specSeq.Add(1)),
		Format: cacheTestFormat,
	}
	if len(options) > 0 {
		spec.Options = map[string]string{}
		for i := 0; i < len(options); i += 2 {
			spec.Options[options[i]] = options[i+1]
		}
	}
	return spec
}

// gate makes the test loader wait, when it loads spec, until the returned
// function is called (at the latest when the test ends).
func gate(t *testing.T, spec inference.Spec) (open func()) {
	ch := make(chan struct{})
	loads.Lock()
	loads.gates[spec.URI] = ch
	loads.Unlock()
	open = sync.OnceFunc(func() { close(ch) })
	t.Cleanup(open)
	return open
}

func loadCalls(spec inference.Spec) int {
	loads.Lock()
	defer loads.Unlock()
	return loads.calls[spec.URI]
}

// loadedModels returns the models the test loader made for spec, oldest
// first.
func loadedModels(spec inference.Spec) []*countingModel {
	loads.Lock()
	defer loads.Unlock()
	return append([]*countingModel(nil), loads.models[spec.URI]...)
}

// waitFor polls cond until it holds, and fails t if it does not hold within
// a deadline generous enough for a loaded machine. It bounds a wait; it does
// not measure anything.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// checkStats fails t unless got equals want, naming what it checked.
func checkStats(t *testing.T, what string, got, want inference.Stats) {
	t.Helper()
	if got != want {
		t.Errorf("%s: stats %+v, want %+v", what, got, want)
	}
}

func TestCacheConcurrentAcquireLoadsOnce(t *testing.T) {
	c := inference.NewCache(0)
	spec := newSpec(t)
	open := gate(t, spec)

	const n = 64
	handles := make([]*inference.Handle, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { handles[i], errs[i] = c.Acquire(t.Context(), spec) })
	}
	// Every caller has taken its reference, and so is waiting on the one
	// load, before the load may finish.
	waitFor(t, "64 callers hold references", func() bool { return c.Stats().Refs == n })
	open()
	wg.Wait()

	for i, err := range errs {
		if err != nil {
			t.Fatalf("Acquire %d: %v", i, err)
		}
	}
	if got := loadCalls(spec); got != 1 {
		t.Errorf("the loader ran %d times, want 1", got)
	}
	checkStats(t, "after 64 acquires", c.Stats(), inference.Stats{Loads: 1, Hits: n - 1, Refs: n})
	models := loadedModels(spec)
	if len(models) != 1 {
		t.Fatalf("the loader made %d models, want 1", len(models))
	}
	model := models[0]
	if model.device != inference.CPU {
		t.Errorf("a Spec with no device loaded onto %q, want cpu", model.device)
	}
	id := handles[0].ID()
	if id.URI != spec.URI || id.Instance == "" {
		t.Errorf("ID() = %+v, want URI %q and an instance", id, spec.URI)
	}
	loaders := 0
	for i, h := range handles {
		if h.Model() != inference.Model(model) {
			t.Errorf("handle %d has model %p, want %p", i, h.Model(), model)
		}
		if h.ID() != id {
			t.Errorf("handle %d has ID %v, want %v", i, h.ID(), id)
		}
		if loaded, _ := h.Loaded(); loaded {
			loaders++
		}
	}
	if loaders != 1 {
		t.Errorf("%d handles report that they loaded the model, want 1", loaders)
	}

	for _, h := range handles {
		wg.Go(h.Release)
	}
	wg.Wait()
	checkStats(t, "after 64 releases", c.Stats(), inference.Stats{Loads: 1, Hits: n - 1, Releases: n, Closes: 1})
	if got := model.closes.Load(); got != 1 {
		t.Errorf("the model was closed %d times, want 1", got)
	}

	// Release is idempotent.
	for _, h := range handles {
		h.Release()
	}
	checkStats(t, "after releasing every handle again", c.Stats(), inference.Stats{Loads: 1, Hits: n - 1, Releases: n, Closes: 1})
	if got := model.closes.Load(); got != 1 {
		t.Errorf("after releasing again, the model was closed %d times, want 1", got)
	}

	// A closed model is loaded afresh.
	h, err := c.Acquire(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	if loaded, _ := h.Loaded(); !loaded {
		t.Error("the Acquire after the close reports that it did not load")
	}
	if got := loadCalls(spec); got != 2 {
		t.Errorf("the loader ran %d times, want 2", got)
	}
	if h.ID().Instance == id.Instance || h.ID().URI != spec.URI {
		t.Errorf("the reloaded model has ID %v, the first had %v; want the same URI and a new instance", h.ID(), id)
	}
	if h.Model() == inference.Model(model) {
		t.Error("the cache handed out the closed model again")
	}
	checkStats(t, "after the reload", c.Stats(), inference.Stats{Loads: 2, Hits: n - 1, Releases: n, Closes: 1, Refs: 1})
}

func TestHandleReleaseIsIdempotent(t *testing.T) {
	c := inference.NewCache(0)
	spec := newSpec(t)
	h1, err := c.Acquire(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	h2, err := c.Acquire(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	model := loadedModels(spec)[0]

	h1.Release()
	h1.Release()
	h1.Release()
	checkStats(t, "after releasing one of two handles three times", c.Stats(), inference.Stats{Loads: 1, Hits: 1, Releases: 1, Refs: 1})
	if got := model.closes.Load(); got != 0 {
		t.Fatalf("the model was closed %d times while a handle holds it", got)
	}
	h2.Release()
	checkStats(t, "after releasing both", c.Stats(), inference.Stats{Loads: 1, Hits: 1, Releases: 2, Closes: 1})
	if got := model.closes.Load(); got != 1 {
		t.Errorf("the model was closed %d times, want 1", got)
	}
}

func TestCacheFailedLoadReachesEveryWaiter(t *testing.T) {
	c := inference.NewCache(time.Hour)
	spec := newSpec(t, "fail", "1")
	open := gate(t, spec)

	const n = 8
	handles := make([]*inference.Handle, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { handles[i], errs[i] = c.Acquire(t.Context(), spec) })
	}
	waitFor(t, "8 callers wait on the load", func() bool { return c.Stats().Refs == n })
	open()
	wg.Wait()

	for i := range n {
		if handles[i] != nil {
			t.Errorf("Acquire %d returned a handle for a failed load", i)
		}
		checkErr(t, errs[i], inference.ErrBadModel, "told to fail", spec.URI)
	}
	if got := loadCalls(spec); got != 1 {
		t.Errorf("the loader ran %d times for 8 concurrent callers, want 1", got)
	}
	checkStats(t, "after the failed load", c.Stats(), inference.Stats{LoadFailures: 1})

	// The failure is not cached: the next Acquire calls the loader, which
	// now succeeds.
	h, err := c.Acquire(t.Context(), spec)
	if err != nil {
		t.Fatalf("Acquire after a failed load: %v", err)
	}
	defer h.Release()
	if got := loadCalls(spec); got != 2 {
		t.Errorf("the loader ran %d times, want 2", got)
	}
	if loaded, _ := h.Loaded(); !loaded {
		t.Error("the Acquire after a failed load reports that it did not load")
	}
	checkStats(t, "after the second load", c.Stats(), inference.Stats{Loads: 1, LoadFailures: 1, Refs: 1})
}

func TestCacheDoesNotCacheFailures(t *testing.T) {
	c := inference.NewCache(time.Hour)
	spec := newSpec(t, "fail", "always")
	for i := 1; i <= 3; i++ {
		_, err := c.Acquire(t.Context(), spec)
		checkErr(t, err, inference.ErrBadModel, fmt.Sprintf("load %d of", i))
	}
	if got := loadCalls(spec); got != 3 {
		t.Errorf("the loader ran %d times for 3 acquires of a failing model, want 3", got)
	}
	checkStats(t, "after 3 failed loads", c.StatsFor(spec), inference.Stats{LoadFailures: 3})
}

func TestCachePanickingLoader(t *testing.T) {
	c := inference.NewCache(0)
	spec := newSpec(t, "panic", "1")
	open := gate(t, spec)

	const n = 4
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			h, err := c.Acquire(t.Context(), spec)
			if h != nil {
				h.Release()
				err = errors.New("got a handle")
			}
			errs[i] = err
		})
	}
	waitFor(t, "4 callers wait on the load", func() bool { return c.Stats().Refs == n })
	open()
	wg.Wait()
	for _, err := range errs {
		checkErr(t, err, inference.ErrBadModel, "panicked", "told to panic")
	}
	checkStats(t, "after the panic", c.Stats(), inference.Stats{LoadFailures: 1})
}

func TestCacheLoaderReturningNoModel(t *testing.T) {
	c := inference.NewCache(0)
	spec := newSpec(t, "nil", "1")
	_, err := c.Acquire(t.Context(), spec)
	checkErr(t, err, inference.ErrBadModel, "no model", spec.URI)
	checkStats(t, "after the load", c.Stats(), inference.Stats{LoadFailures: 1})
}

func TestCacheLingerKeepsModel(t *testing.T) {
	// The linger is far longer than the test, so the re-acquire below is
	// always within it.
	c := inference.NewCache(time.Hour)
	spec := newSpec(t)
	h, err := c.Acquire(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	id := h.ID()
	h.Release()
	h.Release()

	h, err = c.Acquire(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if loaded, _ := h.Loaded(); loaded {
		t.Error("the Acquire within the linger reports that it loaded")
	}
	if h.ID() != id {
		t.Errorf("the Acquire within the linger has ID %v, want %v", h.ID(), id)
	}
	h.Release()
	checkStats(t, "after two acquires within the linger", c.Stats(), inference.Stats{Loads: 1, Hits: 1, Releases: 2})
	if got := loadCalls(spec); got != 1 {
		t.Errorf("the loader ran %d times, want 1", got)
	}
	if got := loadedModels(spec)[0].closes.Load(); got != 0 {
		t.Errorf("the model was closed %d times within the linger", got)
	}
}

func TestCacheLingerClosesEventually(t *testing.T) {
	c := inference.NewCache(20 * time.Millisecond)
	spec := newSpec(t)
	h, err := c.Acquire(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	h.Release()
	// The cache counts a close before it calls Close, outside its lock:
	// wait for both.
	closed := func(n int64) bool {
		var done int64
		for _, m := range loadedModels(spec) {
			done += m.closes.Load()
		}
		return c.Stats().Closes == n && done == n
	}
	waitFor(t, "the lingering model is closed", func() bool { return closed(1) })
	model := loadedModels(spec)[0]
	if got := model.closes.Load(); got != 1 {
		t.Errorf("the model was closed %d times, want 1", got)
	}

	// The closed model is not handed out again.
	h, err = c.Acquire(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if h.Model() == inference.Model(model) {
		t.Error("the cache handed out the closed model")
	}
	if got := loadCalls(spec); got != 2 {
		t.Errorf("the loader ran %d times, want 2", got)
	}
	h.Release()
	waitFor(t, "the second model is closed", func() bool { return closed(2) })
	checkStats(t, "at the end", c.Stats(), inference.Stats{Loads: 2, Releases: 2, Closes: 2})
	for i, m := range loadedModels(spec) {
		if got := m.closes.Load(); got != 1 {
			t.Errorf("model %d was closed %d times, want 1", i, got)
		}
	}
}

func TestCacheCancelledWaiter(t *testing.T) {
	c := inference.NewCache(0)
	spec := newSpec(t)
	open := gate(t, spec)

	type result struct {
		h   *inference.Handle
		err error
	}
	loader := make(chan result, 1)
	go func() {
		h, err := c.Acquire(context.Background(), spec)
		loader <- result{h, err}
	}()
	waitFor(t, "the loader runs", func() bool { return loadCalls(spec) == 1 })

	ctx, cancel := context.WithCancel(t.Context())
	waiter := make(chan result, 1)
	go func() {
		h, err := c.Acquire(ctx, spec)
		waiter <- result{h, err}
	}()
	waitFor(t, "the second caller waits", func() bool { return c.Stats().Refs == 2 })
	cancel()
	got := <-waiter
	if got.h != nil {
		t.Error("the cancelled waiter got a handle")
	}
	checkErr(t, got.err, context.Canceled, spec.URI)
	checkStats(t, "after the waiter gave up", c.Stats(), inference.Stats{Refs: 1})

	open()
	first := <-loader
	if first.err != nil {
		t.Fatalf("the loading caller: %v", first.err)
	}
	checkStats(t, "after the load", c.Stats(), inference.Stats{Loads: 1, Refs: 1})
	first.h.Release()
	checkStats(t, "after the release", c.Stats(), inference.Stats{Loads: 1, Releases: 1, Closes: 1})
	if got := loadedModels(spec)[0].closes.Load(); got != 1 {
		t.Errorf("the model was closed %d times, want 1", got)
	}
}

func TestCacheStatsForIsPerSpec(t *testing.T) {
	c := inference.NewCache(time.Hour)
	a, b := newSpec(t), newSpec(t)
	var handles []*inference.Handle
	for _, spec := range []inference.Spec{a, a, a, b} {
		h, err := c.Acquire(t.Context(), spec)
		if err != nil {
			t.Fatal(err)
		}
		handles = append(handles, h)
	}
	handles[0].Release()
	checkStats(t, "spec a", c.StatsFor(a), inference.Stats{Loads: 1, Hits: 2, Releases: 1, Refs: 2})
	checkStats(t, "spec b", c.StatsFor(b), inference.Stats{Loads: 1, Refs: 1})
	checkStats(t, "all specs", c.Stats(), inference.Stats{Loads: 2, Hits: 2, Releases: 1, Refs: 3})
	checkStats(t, "a spec never acquired", c.StatsFor(newSpec(t)), inference.Stats{})
	// The same Spec written with its device spelled out is the same key.
	checkStats(t, "spec b on auto", c.StatsFor(b.WithDevice(inference.Auto)), inference.Stats{Loads: 1, Refs: 1})
	for _, h := range handles {
		h.Release()
	}
}

func TestCacheLoadsOntoTheSpecsDevice(t *testing.T) {
	c := inference.NewCache(0)
	spec := newSpec(t).WithDevice(fakeDevice)
	h, err := c.Acquire(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	if got := loadedModels(spec)[0].device; got != fakeDevice {
		t.Errorf("the loader got the backend of %q, want %q", got, fakeDevice)
	}
}

func TestCacheRejects(t *testing.T) {
	tests := []struct {
		name   string
		spec   inference.Spec
		target error
		parts  []string
	}{
		{"unknown format", inference.Spec{URI: "mem://m", Format: "no-such-format"},
			inference.ErrBadModel, []string{`"no-such-format"`, cacheTestFormat}},
		{"no URI", inference.Spec{Format: cacheTestFormat}, inference.ErrBadModel, []string{"no URI"}},
		{"no format", inference.Spec{URI: "mem://m"}, inference.ErrBadModel, []string{"no format"}},
		{"unregistered device", newSpec(t).WithDevice("tpu"), inference.ErrNoDevice, []string{`"tpu"`}},
		{"CUDA not built in", newSpec(t).WithDevice(inference.CUDA), inference.ErrNoDevice, []string{"-tags cuda"}},
		{"device not answering", newSpec(t).WithDevice(fakeDownDevice), inference.ErrNoDevice, []string{"unplugged"}},
	}
	for _, tt := range tests {
		c := inference.NewCache(0)
		h, err := c.Acquire(t.Context(), tt.spec)
		if err == nil {
			h.Release()
			t.Errorf("%s: Acquire(%v) succeeded", tt.name, tt.spec)
			continue
		}
		checkErr(t, err, tt.target, tt.parts...)
		checkStats(t, tt.name, c.Stats(), inference.Stats{LoadFailures: 1})
		if got := loadCalls(tt.spec); got != 0 {
			t.Errorf("%s: the loader ran %d times", tt.name, got)
		}
	}
}

func TestAcquireUsesSharedCache(t *testing.T) {
	spec := newSpec(t)
	h, err := inference.Acquire(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	h2, err := inference.Shared().Acquire(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if h2.ID() != h.ID() {
		t.Errorf("Acquire and Shared().Acquire gave models %v and %v, want one", h.ID(), h2.ID())
	}
	h.Release()
	h2.Release()
	checkStats(t, "shared cache", inference.Shared().StatsFor(spec), inference.Stats{Loads: 1, Hits: 1, Releases: 2})
}

func TestSpecKey(t *testing.T) {
	spec := inference.Spec{URI: "gs://bucket/m.onnx", Format: "onnx", Options: map[string]string{}}
	reversed := spec
	reversed.Options = map[string]string{}
	for i := range 20 {
		spec.Options[fmt.Sprint("k", i)] = fmt.Sprint("v", i)
		reversed.Options[fmt.Sprint("k", 19-i)] = fmt.Sprint("v", 19-i)
	}
	if spec.Key() != reversed.Key() {
		t.Errorf("Specs with options inserted in different orders have keys %q and %q", spec.Key(), reversed.Key())
	}
	if spec.Key() != spec.WithDevice(inference.Auto).Key() {
		t.Errorf("empty device has key %q, auto has %q", spec.Key(), spec.WithDevice(inference.Auto).Key())
	}
	noOptions := inference.Spec{URI: "u", Format: "f"}
	if noOptions.Key() != (inference.Spec{URI: "u", Format: "f", Options: map[string]string{}}).Key() {
		t.Error("nil and empty options give different keys")
	}

	withOption := func(k, v string) inference.Spec {
		s := spec
		s.Options = maps.Clone(spec.Options)
		s.Options[k] = v
		return s
	}
	withoutOption := func(k string) inference.Spec {
		s := spec
		s.Options = maps.Clone(spec.Options)
		delete(s.Options, k)
		return s
	}
	differs := map[string]inference.Spec{
		"device cpu":        spec.WithDevice(inference.CPU),
		"device cuda":       spec.WithDevice(inference.CUDA),
		"URI":               {URI: "gs://bucket/n.onnx", Format: spec.Format, Options: spec.Options},
		"format":            {URI: spec.URI, Format: "stub", Options: spec.Options},
		"option value":      withOption("k3", "other"),
		"extra option":      withOption("k20", "v20"),
		"missing option":    withoutOption("k7"),
		"empty option":      withOption("", ""),
		"option spelled in": withOption("k1", `v1"|"k2"="v2`),
	}
	for what, other := range differs {
		if other.Key() == spec.Key() {
			t.Errorf("%s differs, yet both Specs have key %q", what, spec.Key())
		}
	}
	if spec.WithDevice(inference.CPU).Key() == spec.WithDevice(inference.CUDA).Key() {
		t.Error("cpu and cuda Specs have the same key")
	}
}

func TestSpecValidate(t *testing.T) {
	if err := (inference.Spec{URI: "u", Format: "f"}).Validate(); err != nil {
		t.Errorf("Validate of a Spec with URI and format: %v", err)
	}
	if err := (inference.Spec{URI: "u"}).Validate(); err == nil {
		t.Error("Validate of a Spec without a format succeeded")
	}
	if err := (inference.Spec{Format: "f"}).Validate(); err == nil {
		t.Error("Validate of a Spec without a URI succeeded")
	}
}

func TestSpecString(t *testing.T) {
	spec := inference.Spec{URI: "gs://bucket/m.onnx", Format: "onnx"}
	if got, want := spec.String(), "onnx:gs://bucket/m.onnx on auto"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got, want := spec.WithDevice(inference.CUDA).String(), "onnx:gs://bucket/m.onnx on cuda"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if spec.Device != "" {
		t.Errorf("WithDevice changed the Spec it was called on to device %q", spec.Device)
	}
	if got, want := (inference.ModelID{URI: "gs://b/m", Instance: "1234"}).String(), "gs://b/m@1234"; got != want {
		t.Errorf("ModelID.String() = %q, want %q", got, want)
	}
}
