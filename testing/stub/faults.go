package stub

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/beamml/beamml/inference"
)

// A Fault is what a stub model does on a batch that holds a chosen row.
type Fault string

const (
	// Fail returns an error that names the row.
	Fail Fault = "fail"
	// Panic panics with a message that names the row.
	Panic Fault = "panic"
	// Hang blocks until the run's context is done (or the model is
	// closed) and returns an error that wraps the context's: a slow model
	// that honours its deadline.
	Hang Fault = "hang"
	// Deadlock blocks, ignoring the run's context, until the model is
	// closed: a model stuck for good, which only a caller that stops
	// waiting survives.
	Deadlock Fault = "deadlock"
)

// faults is every Fault, in the order a row chosen for several does them.
var faults = []Fault{Deadlock, Hang, Panic, Fail}

// The option keys of a fault: "<fault>_on" holds a marker, "<fault>_rate"
// a rate. "fail_on" is also WithFailures'.
func markerOption(f Fault) string { return string(f) + "_on" }
func rateOption(f Fault) string   { return string(f) + "_rate" }

// WithFault makes a model do f on every batch that holds a row whose first
// value equals marker. It panics on an unknown fault.
func WithFault(s inference.Spec, f Fault, marker float32) inference.Spec {
	checkFault(f)
	return with(s, markerOption(f), strconv.FormatFloat(float64(marker), 'g', -1, 32))
}

// WithFaultRate makes a model do f on every batch that holds a row chosen
// by rate: Selected(f, rate, x[0]). Of many distinct values of x[0], about
// rate of them are chosen. It panics on an unknown fault or a rate outside
// [0, 1].
func WithFaultRate(s inference.Spec, f Fault, rate float64) inference.Spec {
	checkFault(f)
	if !(rate >= 0 && rate <= 1) {
		panic(fmt.Sprintf("stub: WithFaultRate(%s, %v): the rate must be in [0, 1]", f, rate))
	}
	return with(s, rateOption(f), strconv.FormatFloat(rate, 'g', -1, 64))
}

// WithFailures is WithFault(s, Fail, marker): a model that fails every
// batch holding a row whose first value equals marker.
func WithFailures(s inference.Spec, marker float32) inference.Spec {
	return WithFault(s, Fail, marker)
}

func checkFault(f Fault) {
	if !slices.Contains(faults, f) {
		panic(fmt.Sprintf("stub: unknown fault %q, want one of %v", f, faults))
	}
}

// Selected reports whether WithFaultRate(s, f, rate) chooses the rows whose
// first value is x0. The choice hashes f and the bits of x0 (so 0 and -0
// differ) to a number h in [0, 1) and chooses the row if h < rate: a rate
// of 0 chooses none, 1 chooses all, and a larger rate chooses a superset.
func Selected(f Fault, rate float64, x0 float32) bool {
	h := uint64(14695981039346656037) // FNV-1a of the fault's name …
	for _, c := range []byte(f) {
		h = (h ^ uint64(c)) * 1099511628211
	}
	h ^= uint64(math.Float32bits(x0)) // … then splitmix64's finaliser over x0
	h = (h ^ h>>30) * 0xbf58476d1ce4e5b9
	h = (h ^ h>>27) * 0x94d049bb133111eb
	h ^= h >> 31
	return float64(h>>11)/(1<<53) < rate
}

// faultRule is one fault's choice of rows.
type faultRule struct {
	fault  Fault
	marker *float32
	rate   float64
}

func (r faultRule) chooses(x0 float32) bool {
	return (r.marker != nil && x0 == *r.marker) || (r.rate > 0 && Selected(r.fault, r.rate, x0))
}

// parseFaults reads the fault options of a Spec, in the order of faults.
func parseFaults(o map[string]string) ([]faultRule, error) {
	var rules []faultRule
	for _, f := range faults {
		r := faultRule{fault: f}
		if v, ok := o[markerOption(f)]; ok {
			m, err := strconv.ParseFloat(v, 32)
			if err != nil {
				return nil, fmt.Errorf("stub: option %s=%q: %v: %w", markerOption(f), v, err, inference.ErrBadModel)
			}
			marker := float32(m)
			r.marker = &marker
		}
		if v, ok := o[rateOption(f)]; ok {
			rate, err := strconv.ParseFloat(v, 64)
			if err != nil || !(rate >= 0 && rate <= 1) {
				return nil, fmt.Errorf("stub: option %s=%q is not a rate in [0, 1]: %w", rateOption(f), v, inference.ErrBadModel)
			}
			r.rate = rate
		}
		if r.marker != nil || r.rate > 0 {
			rules = append(rules, r)
		}
	}
	return rules, nil
}

// fault does the fault of the first chosen row of a batch whose rows' first
// values are firsts, if there is one: it returns the error, panics or
// blocks.
func (m *Model) fault(ctx context.Context, firsts []float32) error {
	for r, x0 := range firsts {
		for _, rule := range m.faults {
			if !rule.chooses(x0) {
				continue
			}
			what := fmt.Sprintf("stub: row %d of %d has x[0] = %v, marked to %s", r, len(firsts), x0, rule.fault)
			switch rule.fault {
			case Fail:
				return fmt.Errorf("%s", what)
			case Panic:
				panic(what)
			case Hang:
				select {
				case <-ctx.Done():
					return fmt.Errorf("%s: %w", what, ctx.Err())
				case <-m.done:
					return fmt.Errorf("%s: the model was closed", what)
				}
			case Deadlock:
				<-m.done
				return fmt.Errorf("%s: the model was closed", what)
			}
		}
	}
	return nil
}

// WithMemoryUse makes a run need bytes of working memory for each unit of
// |x[0]| of each row, rounded up: ⌈bytes·Σ|x[0]|⌉. A run that needs more
// than its context's memory budget (inference.MemoryBudget) fails with an
// *inference.ResourceError, which wraps inference.ErrResourceExhausted.
func WithMemoryUse(s inference.Spec, bytes int64) inference.Spec {
	return with(s, optMemoryUse, strconv.FormatInt(bytes, 10))
}

// checkMemory refuses a run whose rows need more than ctx's memory budget.
func (m *Model) checkMemory(ctx context.Context, firsts []float32) error {
	if m.memoryUse == 0 {
		return nil
	}
	var units float64
	for _, x0 := range firsts {
		units += math.Abs(float64(x0))
	}
	need := int64(-1) // overflows int64
	if f := math.Ceil(units * float64(m.memoryUse)); f < math.MaxInt64/2 {
		need = int64(f)
	}
	if budget := inference.MemoryBudget(ctx); need < 0 || need > budget {
		return &inference.ResourceError{Model: "stub", What: fmt.Sprintf("working memory of %d rows", len(firsts)), Bytes: need, Budget: budget}
	}
	return nil
}
