package stub

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/beamml/beamml/inference"
)

// optTriggers holds the triggers of FailIfAny and FailIfOutside, as a JSON
// list in the order they were added.
const optTriggers = "fail_if"

// sentinels are the errors a trigger's failure may wrap: a Spec carries
// the one chosen by its message, since an error value cannot travel to a
// worker.
var sentinels = []error{
	inference.ErrIndexOutOfRange, inference.ErrUnexpectedInput, inference.ErrMissingInput,
	inference.ErrMissingOutput, inference.ErrUnsupportedOp, inference.ErrShape, inference.ErrType,
	inference.ErrNoDevice, inference.ErrOutOfMemory, inference.ErrBadModel, inference.ErrResourceExhausted,
}

// trigger is one FailIf… rule. Numbers are strconv text, which JSON
// numbers are not: it carries ±Inf and NaN.
type trigger struct {
	Input string `json:"input"`
	Equal string `json:"equal,omitempty"` // FailIfAny's value
	Lo    string `json:"lo,omitempty"`    // FailIfOutside's bounds
	Hi    string `json:"hi,omitempty"`
	Err   string `json:"err,omitempty"` // the sentinel's message; "" for none

	equal, lo, hi float64
	outside       bool
	err           error
}

// FailIfAny makes the model fail every batch holding a row in which any
// value of input equals value (NaN matches NaN; int64 values are compared
// as float64, exactly below 2⁵³). The error names the row, the input, the
// value and its index in the row, and wraps err, which must be nil or one
// of the inference sentinels (inference.ErrIndexOutOfRange,
// inference.ErrShape, …): RunInference splits such a batch until the row
// fails alone, as it does with a real model's error.
//
// It panics on an err that is not an inference sentinel, at pipeline
// construction, as a Spec must say which sentinel in text.
func FailIfAny(s inference.Spec, input string, value float64, err error) inference.Spec {
	return addTrigger(s, trigger{Input: input, Equal: formatFloat(value), Err: sentinelName("FailIfAny", err)})
}

// FailIfOutside makes the model fail every batch holding a row in which
// any value of input lies outside [lo, hi] (NaN lies outside every
// range): token ids past a vocabulary, say, with
// inference.ErrIndexOutOfRange as a model's Gather would fail. The error
// and err are as for FailIfAny. It panics on lo > hi, a NaN bound, or an
// err that is not an inference sentinel.
func FailIfOutside(s inference.Spec, input string, lo, hi float64, err error) inference.Spec {
	if !(lo <= hi) {
		panic(fmt.Sprintf("stub: FailIfOutside(%q, %v, %v): want lo <= hi", input, lo, hi))
	}
	return addTrigger(s, trigger{Input: input, Lo: formatFloat(lo), Hi: formatFloat(hi), Err: sentinelName("FailIfOutside", err)})
}

func sentinelName(caller string, err error) string {
	if err == nil {
		return ""
	}
	for _, s := range sentinels {
		if err == s {
			return s.Error()
		}
	}
	panic(fmt.Sprintf("stub: %s: error %q is not an inference sentinel; want nil or one of %v", caller, err, sentinels))
}

func addTrigger(s inference.Spec, t trigger) inference.Spec {
	var ts []trigger
	if v, ok := s.Options[optTriggers]; ok {
		if err := json.Unmarshal([]byte(v), &ts); err != nil {
			panic(fmt.Sprintf("stub: option %s=%q of spec %v: %v", optTriggers, v, s, err))
		}
	}
	data, err := json.Marshal(append(ts, t))
	if err != nil { // triggers hold strings only
		panic(err)
	}
	return with(s, optTriggers, string(data))
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// parseTriggers reads a Spec's triggers and checks that each names an
// input of the model.
func (m *Model) parseTriggers(o map[string]string) error {
	v, ok := o[optTriggers]
	if !ok {
		return nil
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("stub: option %s=%q: %s: %w", optTriggers, v, fmt.Sprintf(format, args...), inference.ErrBadModel)
	}
	if err := json.Unmarshal([]byte(v), &m.triggers); err != nil {
		return bad("%v", err)
	}
	for i := range m.triggers {
		t := &m.triggers[i]
		var err error
		if !slices.ContainsFunc(m.Inputs(), func(in inference.TensorInfo) bool { return in.Name == t.Input }) {
			return bad("trigger %d is on input %q; the model's inputs are %v", i, t.Input, m.Inputs())
		}
		if t.outside = t.Equal == ""; t.outside {
			t.lo, err = strconv.ParseFloat(t.Lo, 64)
			if err == nil {
				t.hi, err = strconv.ParseFloat(t.Hi, 64)
			}
			if err == nil && !(t.lo <= t.hi) {
				err = errors.New("lo > hi")
			}
		} else {
			t.equal, err = strconv.ParseFloat(t.Equal, 64)
		}
		if err != nil {
			return bad("trigger %d: %v", i, err)
		}
		if t.Err != "" {
			for _, s := range sentinels {
				if s.Error() == t.Err {
					t.err = s
				}
			}
			if t.err == nil {
				return bad("trigger %d: %q is not an inference sentinel", i, t.Err)
			}
		}
	}
	return nil
}

// trigger returns the failure of the first row, in batch order, that a
// trigger matches, or nil. Feeds are already checked: every input is
// there with rows rows.
func (m *Model) trigger(feeds map[string]inference.Tensor, rows int) error {
	if len(m.triggers) == 0 || rows == 0 {
		return nil
	}
	values := map[string][]float64{}
	for _, t := range m.triggers {
		if values[t.Input] == nil {
			values[t.Input] = floats(feeds[t.Input])
		}
	}
	for r := range rows {
		for _, t := range m.triggers {
			vs := values[t.Input]
			width := len(vs) / rows
			for j, v := range vs[r*width : (r+1)*width] {
				var why string
				switch {
				case !t.outside && sameValue(v, t.equal):
					why = fmt.Sprintf("marked to fail on %v", t.equal)
				case t.outside && !(v >= t.lo && v <= t.hi):
					why = fmt.Sprintf("outside [%v, %v]", t.lo, t.hi)
				default:
					continue
				}
				msg := fmt.Sprintf("stub: row %d of %d: input %q has %v at index %d of the row, %s", r, rows, t.Input, v, j, why)
				if t.err != nil {
					return fmt.Errorf("%s: %w", msg, t.err)
				}
				return errors.New(msg)
			}
		}
	}
	return nil
}
