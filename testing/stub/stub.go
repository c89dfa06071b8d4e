package stub

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/beamml/beamml/inference"
	_ "github.com/beamml/beamml/inference/cpu" // stub models run on the host
)

// Format is the format name stub models register under.
const Format = "stub"

// Option keys of stub Specs; faults.go adds "<fault>_on" and
// "<fault>_rate" for each Fault, latency.go "delay_per_row".
const (
	optKind      = "kind"       // "echo", "affine" or "shaped"
	optWidth     = "width"      // echo: the row length
	optWeights   = "weights"    // affine: rows of W separated by ';', values by ','
	optBias      = "bias"       // affine: values separated by ','
	optDelay     = "delay"      // each Run sleeps this long (time.ParseDuration)
	optLoadDelay = "load_delay" // loading sleeps this long
	optLoadFail  = "load_fail"  // loading fails with this message, wrapping ErrBadModel
	optLoadDown  = "load_down"  // loading fails with this message, as an unreachable store would
	optTag       = "tag"        // ignored by the model; makes the Spec distinct
	optRecord    = "record"     // keep the first value of every row of every Run
	optMaxBatch  = "max_batch"  // MaxBatch reports this (a device-memory ceiling)
	optMemoryUse = "memory_use" // a run needs this many bytes per unit of |x[0]| (WithMemoryUse)
)

func init() { inference.RegisterLoader(Format, load) }

// Echo returns the Spec of a model whose output y is its input x, rows of
// width values.
func Echo(width int) inference.Spec {
	return inference.Spec{
		URI:     fmt.Sprintf("stub://echo/%d", width),
		Format:  Format,
		Options: map[string]string{optKind: "echo", optWidth: strconv.Itoa(width)},
	}
}

// Affine returns the Spec of a model computing y = x·Wᵀ + b for W of shape
// [out, in] and b of length out (nil for zeros).
func Affine(w [][]float32, b []float32) inference.Spec {
	rows := make([]string, len(w))
	for i, r := range w {
		rows[i] = joinFloats(r)
	}
	opts := map[string]string{optKind: "affine", optWeights: strings.Join(rows, ";")}
	if b != nil {
		opts[optBias] = joinFloats(b)
	}
	in := 0
	if len(w) > 0 {
		in = len(w[0])
	}
	return inference.Spec{URI: fmt.Sprintf("stub://affine/%dx%d", len(w), in), Format: Format, Options: opts}
}

// WithDelay makes each Run sleep for d before computing: a slow model, for
// tests of concurrent bundles.
func WithDelay(s inference.Spec, d time.Duration) inference.Spec {
	return with(s, optDelay, d.String())
}

// WithLoadDelay makes loading the model take d.
func WithLoadDelay(s inference.Spec, d time.Duration) inference.Spec {
	return with(s, optLoadDelay, d.String())
}

// WithLoadFailure makes loading the model fail with msg, wrapping
// inference.ErrBadModel.
func WithLoadFailure(s inference.Spec, msg string) inference.Spec {
	return with(s, optLoadFail, msg)
}

// WithRecording makes the model keep the first value of every row of every
// Run call, which Batches returns: tests use it to see how elements were
// batched.
func WithRecording(s inference.Spec) inference.Spec { return with(s, optRecord, "true") }

// WithMaxBatch makes the model report n as its memory-bound batch ceiling
// (inference.BatchLimiter), as a GPU model does.
func WithMaxBatch(s inference.Spec, n int) inference.Spec {
	return with(s, optMaxBatch, strconv.Itoa(n))
}

// WithUnavailableStore makes loading the model fail with msg as a
// transient error (one that wraps no inference sentinel), as when the model
// store cannot be reached.
func WithUnavailableStore(s inference.Spec, msg string) inference.Spec {
	return with(s, optLoadDown, msg)
}

// Tag returns a copy of s that the cache treats as a different model, so
// that tests can count loads of their own model.
func Tag(s inference.Spec, tag string) inference.Spec { return with(s, optTag, tag) }

func with(s inference.Spec, k, v string) inference.Spec {
	opts := make(map[string]string, len(s.Options)+1)
	for ok, ov := range s.Options {
		opts[ok] = ov
	}
	opts[k] = v
	s.Options = opts
	return s
}

// Model is a loaded stub model. Its methods are safe for concurrent use.
type Model struct {
	in, out   int
	w, b      []float32              // w is [out, in] row-major; nil for echo
	inputs    []inference.TensorInfo // a Shaped model's; nil for echo and affine
	outputs   []inference.TensorInfo
	triggers  []trigger   // in the order they were added
	faults    []faultRule // in the order of faults
	memoryUse int64       // bytes per unit of |x[0]|; 0: none
	delay     time.Duration
	backend   inference.Device
	record    bool
	maxBatch  int
	done      chan struct{} // closed by Close: releases Hang and Deadlock
	closeOnce sync.Once

	delayPerRow time.Duration // added to delay for each row of a Run (WithLatency)

	mu      sync.Mutex
	batches [][]float32 // guarded by mu; with record set

	runs, rows, inFlight, maxInFlight atomic.Int64
	closed                            atomic.Bool
}

// RunStats counts a stub model's Run calls.
type RunStats struct {
	Runs        int64 // Run calls, failed ones included
	Rows        int64 // rows across all Run calls
	MaxInFlight int64 // the most Run calls that overlapped in time
}

// Stats returns the model's counters.
func (m *Model) Stats() RunStats {
	return RunStats{Runs: m.runs.Load(), Rows: m.rows.Load(), MaxInFlight: m.maxInFlight.Load()}
}

// Batches returns the first value of each row of every Run call so far, in
// the order the calls started, if the Spec was made WithRecording.
func (m *Model) Batches() [][]float32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.batches)
}

// MaxBatch is the ceiling set WithMaxBatch, or 0 (none).
func (m *Model) MaxBatch() int { return m.maxBatch }

// Closed reports whether Close was called.
func (m *Model) Closed() bool { return m.closed.Load() }

// Backend is the device the model was loaded for. Stub models compute on
// the host whatever it is.
func (m *Model) Backend() inference.Device { return m.backend }

func load(ctx context.Context, spec inference.Spec, backend inference.Backend) (inference.Model, error) {
	o := spec.Options
	if d, err := durationOption(o, optLoadDelay); err != nil {
		return nil, err
	} else if d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	if msg, ok := o[optLoadDown]; ok {
		return nil, fmt.Errorf("stub: %s", msg)
	}
	if msg, ok := o[optLoadFail]; ok {
		return nil, fmt.Errorf("stub: %s: %w", msg, inference.ErrBadModel)
	}
	m := &Model{backend: backend.Device(), record: o[optRecord] == "true", done: make(chan struct{})}
	var err error
	if m.faults, err = parseFaults(o); err != nil {
		return nil, err
	}
	if v, ok := o[optMemoryUse]; ok {
		if m.memoryUse, err = strconv.ParseInt(v, 10, 64); err != nil || m.memoryUse < 0 {
			return nil, fmt.Errorf("stub: option %s=%q is not a number of bytes: %w", optMemoryUse, v, inference.ErrBadModel)
		}
	}
	if v, ok := o[optMaxBatch]; ok {
		if m.maxBatch, err = strconv.Atoi(v); err != nil || m.maxBatch < 0 {
			return nil, fmt.Errorf("stub: option %s=%q is not a batch size: %w", optMaxBatch, v, inference.ErrBadModel)
		}
	}
	if m.delay, err = durationOption(o, optDelay); err != nil {
		return nil, err
	}
	if m.delayPerRow, err = durationOption(o, optDelayPerRow); err != nil {
		return nil, err
	}
	switch kind := o[optKind]; kind {
	case "echo":
		if m.in, err = strconv.Atoi(o[optWidth]); err != nil || m.in <= 0 {
			return nil, fmt.Errorf("stub: echo width %q is not a positive integer: %w", o[optWidth], inference.ErrBadModel)
		}
		m.out = m.in
	case "affine":
		if err := m.parseAffine(o[optWeights], o[optBias]); err != nil {
			return nil, err
		}
	case "shaped":
		if err := m.parsePorts(o[optPorts]); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("stub: unknown kind %q, want echo, affine or shaped: %w", kind, inference.ErrBadModel)
	}
	if err := m.parseTriggers(o); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Model) parseAffine(weights, bias string) error {
	if weights == "" {
		return fmt.Errorf("stub: affine model has no weights: %w", inference.ErrBadModel)
	}
	for i, row := range strings.Split(weights, ";") {
		vals, err := parseFloats(row)
		if err != nil {
			return fmt.Errorf("stub: weights row %d: %v: %w", i, err, inference.ErrBadModel)
		}
		if i == 0 {
			m.in = len(vals)
		} else if len(vals) != m.in {
			return fmt.Errorf("stub: weights row %d has %d values, row 0 has %d: %w", i, len(vals), m.in, inference.ErrBadModel)
		}
		m.w = append(m.w, vals...)
		m.out++
	}
	m.b = make([]float32, m.out)
	if bias != "" {
		b, err := parseFloats(bias)
		if err != nil || len(b) != m.out {
			return fmt.Errorf("stub: bias %q must be %d numbers: %w", bias, m.out, inference.ErrBadModel)
		}
		m.b = b
	}
	return nil
}

// Inputs is x: float32 [?, in] for Echo and Affine, the declared inputs
// for Shaped.
func (m *Model) Inputs() []inference.TensorInfo {
	if m.inputs != nil {
		return cloneInfos(m.inputs)
	}
	return []inference.TensorInfo{{Name: "x", DType: inference.Float32, Shape: []int{inference.Dynamic, m.in}}}
}

// Outputs is y: float32 [?, out] for Echo and Affine, the declared
// outputs for Shaped.
func (m *Model) Outputs() []inference.TensorInfo {
	if m.outputs != nil {
		return cloneInfos(m.outputs)
	}
	return []inference.TensorInfo{{Name: "y", DType: inference.Float32, Shape: []int{inference.Dynamic, m.out}}}
}

func cloneInfos(infos []inference.TensorInfo) []inference.TensorInfo {
	out := slices.Clone(infos)
	for i := range out {
		out[i].Shape = slices.Clone(out[i].Shape)
	}
	return out
}

// ByteSize is the size of the weights and bias.
func (m *Model) ByteSize() int64 { return int64(len(m.w)+len(m.b)) * 4 }

// Close marks the model closed and releases the runs that Hang or
// Deadlock; Run fails afterwards.
func (m *Model) Close() error {
	m.closed.Store(true)
	m.closeOnce.Do(func() { close(m.done) })
	return nil
}

// Run computes y for a batch x, or a Shaped model's outputs by its rule.
// Before computing it does, in order: the delay, the faults of the rows'
// first values, the triggers of FailIfAny and FailIfOutside, and the
// memory check.
func (m *Model) Run(ctx context.Context, inputs map[string]inference.Tensor) (map[string]inference.Tensor, error) {
	n := m.inFlight.Add(1)
	defer m.inFlight.Add(-1)
	for {
		max := m.maxInFlight.Load()
		if n <= max || m.maxInFlight.CompareAndSwap(max, n) {
			break
		}
	}
	m.runs.Add(1)
	if m.closed.Load() {
		return nil, fmt.Errorf("stub: Run on a closed model")
	}
	if m.inputs != nil {
		rows, firsts, err := m.checkFeeds(inputs)
		if err != nil {
			return nil, err
		}
		if err := m.prepare(ctx, inputs, rows, firsts); err != nil {
			return nil, err
		}
		return m.computeShaped(inputs, rows)
	}
	x, ok := inputs["x"]
	if !ok || len(inputs) != 1 {
		return nil, fmt.Errorf("stub: want exactly input \"x\", got %d inputs: %w", len(inputs), inference.ErrShape)
	}
	shape := x.Shape()
	if len(shape) != 2 || shape[1] != m.in {
		return nil, fmt.Errorf("stub: input \"x\" is %v, want float32[? %d]: %w", x, m.in, inference.ErrShape)
	}
	xs, err := inference.Data[float32](x)
	if err != nil {
		return nil, fmt.Errorf("stub: input \"x\": %w", err)
	}
	rows := shape[0]
	firsts := make([]float32, rows)
	if m.in > 0 {
		for r := range firsts {
			firsts[r] = xs[r*m.in]
		}
	}
	if err := m.prepare(ctx, inputs, rows, firsts); err != nil {
		return nil, err
	}
	ys := make([]float32, rows*m.out)
	if m.w == nil {
		copy(ys, xs)
	} else {
		for r := range rows {
			xr := xs[r*m.in : (r+1)*m.in]
			for o := range m.out {
				acc := m.b[o]
				for i, wv := range m.w[o*m.in : (o+1)*m.in] {
					acc += wv * xr[i]
				}
				ys[r*m.out+o] = acc
			}
		}
	}
	y, err := inference.New([]int{rows, m.out}, ys)
	if err != nil {
		return nil, err
	}
	return map[string]inference.Tensor{"y": y}, nil
}

// prepare does what every kind of stub does to a checked batch before it
// computes: it records the rows' first values, sleeps the delay
// (runDelay), does the faults and the triggers, and checks the memory the
// batch needs.
func (m *Model) prepare(ctx context.Context, feeds map[string]inference.Tensor, rows int, firsts []float32) error {
	m.rows.Add(int64(rows))
	if m.record {
		m.mu.Lock()
		m.batches = append(m.batches, firsts)
		m.mu.Unlock()
	}
	if d := m.runDelay(rows); d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	if err := m.fault(ctx, firsts); err != nil {
		return err
	}
	if err := m.trigger(feeds, rows); err != nil {
		return err
	}
	return m.checkMemory(ctx, firsts)
}

func durationOption(o map[string]string, key string) (time.Duration, error) {
	v, ok := o[key]
	if !ok {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("stub: option %s=%q: %v: %w", key, v, err, inference.ErrBadModel)
	}
	return d, nil
}

func joinFloats(v []float32) string {
	s := make([]string, len(v))
	for i, f := range v {
		s[i] = strconv.FormatFloat(float64(f), 'g', -1, 32)
	}
	return strings.Join(s, ",")
}

func parseFloats(s string) ([]float32, error) {
	parts := strings.Split(s, ",")
	out := make([]float32, len(parts))
	for i, p := range parts {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 32)
		if err != nil {
			return nil, err
		}
		out[i] = float32(f)
	}
	return out, nil
}
