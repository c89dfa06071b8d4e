package runinference

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/beamml/beamml/inference"
)

// Stage says where an element failed.
type Stage string

const (
	// StageLoad: the model could not be loaded for a transient reason (an
	// unreachable store). A model that can never load (malformed,
	// unsupported, no such device) fails the pipeline instead.
	StageLoad Stage = "load"
	// StageInput: the element does not fit the model's inputs (a missing
	// or extra input, a wrong element type or shape), or no model serves
	// its key (ModelsByKey). It fails at once, unbatched.
	StageInput Stage = "input"
	// StageBatch: the element fit the model's inputs but could not be
	// stacked into a batch with others.
	StageBatch Stage = "batch"
	// StageInference: the model failed on a batch holding only this
	// element: it returned an error, panicked, passed its InferenceTimeout
	// or went over its memory budget.
	StageInference Stage = "inference"
	// StageOutput: the model's outputs could not be split back into one
	// result per element.
	StageOutput Stage = "output"
)

// FailureKind says what went wrong with an element, in a form a pipeline
// can group and count failures by (a metric per kind, a dead-letter table
// partitioned by kind), where Failure.Err is a message for people. The
// stage says where it went wrong; the kind says what.
type FailureKind string

// The kinds of failure. Each but KindOther matches a sentinel error of
// package inference (or a context error) that the failure's cause wraps;
// when a cause wraps several, the kind is the first of this list that it
// wraps: what ended the run (a panic, the deadline, memory) before what
// was wrong with the element, and the specific data errors before the
// general shape mismatch.
const (
	// KindPanic: code running the model panicked (inference.ErrPanic);
	// the message holds the panic's value and innermost frames. A bug in
	// a backend or a user's Model, not in the element.
	KindPanic FailureKind = "panic"
	// KindDeadline: the run passed its InferenceTimeout
	// (context.DeadlineExceeded).
	KindDeadline FailureKind = "deadline"
	// KindMemoryBudget: the run asked for more memory than its
	// MemoryBudget allows (inference.ErrResourceExhausted): the element
	// is too large for the budget.
	KindMemoryBudget FailureKind = "memory_budget"
	// KindOutOfMemory: the device could not allocate what the element
	// needs, alone (inference.ErrOutOfMemory).
	KindOutOfMemory FailureKind = "out_of_memory"
	// KindIndexOutOfRange: an index in the element lies outside the axis
	// it indexes, such as a token id past the vocabulary
	// (inference.ErrIndexOutOfRange).
	KindIndexOutOfRange FailureKind = "index_out_of_range"
	// KindDivisionByZero: an integer Div or Mod of the model divides by an
	// element that is 0 (inference.ErrDivisionByZero).
	KindDivisionByZero FailureKind = "division_by_zero"
	// KindUnexpectedInput: the element has a tensor the model has no
	// input for (inference.ErrUnexpectedInput): a row id belongs in the
	// key of the keyed variants, not in the example.
	KindUnexpectedInput FailureKind = "unexpected_input"
	// KindMissingInput: the element lacks a tensor for one of the model's
	// inputs (inference.ErrMissingInput).
	KindMissingInput FailureKind = "missing_input"
	// KindMissingOutput: an output wanted by name is not among those the
	// model returned (inference.ErrMissingOutput).
	KindMissingOutput FailureKind = "missing_output"
	// KindElementType: a tensor's element type is not the model input's,
	// such as float32 token ids for an int64 input (inference.ErrType).
	KindElementType FailureKind = "element_type"
	// KindShape: a tensor's rank or dimensions do not match the model's
	// input, or the model's outputs cannot be split per element
	// (inference.ErrShape).
	KindShape FailureKind = "shape"
	// KindUnsupportedType: the model uses an element type that the
	// runtime does not hold (inference.ErrUnsupportedType).
	KindUnsupportedType FailureKind = "unsupported_type"
	// KindUnsupportedOp: the backend cannot run an operator or element
	// type the run reached (inference.ErrUnsupportedOp).
	KindUnsupportedOp FailureKind = "unsupported_op"
	// KindBadModel: the model is malformed or inconsistent
	// (inference.ErrBadModel).
	KindBadModel FailureKind = "bad_model"
	// KindOther: none of the above, such as an error of a user's Model of
	// its own or a transient load failure (stage load); the message says
	// what.
	KindOther FailureKind = "other"
)

// kindOf classifies an error by the sentinel it wraps, in the order of the
// kinds' list.
func kindOf(err error) FailureKind {
	switch {
	case errors.Is(err, inference.ErrPanic):
		return KindPanic
	case errors.Is(err, context.DeadlineExceeded):
		return KindDeadline
	case errors.Is(err, inference.ErrResourceExhausted):
		return KindMemoryBudget
	case errors.Is(err, inference.ErrOutOfMemory):
		return KindOutOfMemory
	case errors.Is(err, inference.ErrIndexOutOfRange):
		return KindIndexOutOfRange
	case errors.Is(err, inference.ErrDivisionByZero):
		return KindDivisionByZero
	case errors.Is(err, inference.ErrUnexpectedInput):
		return KindUnexpectedInput
	case errors.Is(err, inference.ErrMissingInput):
		return KindMissingInput
	case errors.Is(err, inference.ErrMissingOutput):
		return KindMissingOutput
	case errors.Is(err, inference.ErrType):
		return KindElementType
	case errors.Is(err, inference.ErrShape):
		return KindShape
	case errors.Is(err, inference.ErrUnsupportedType):
		return KindUnsupportedType
	case errors.Is(err, inference.ErrUnsupportedOp):
		return KindUnsupportedOp
	case errors.Is(err, inference.ErrBadModel):
		return KindBadModel
	}
	return KindOther
}

// Failure is an element RunInferenceWithFailures could not predict: the
// example, what went wrong (Kind, to group by, and Err, the message), the
// stage it failed at, and the model instance (zero when the model failed to
// load). The keyed variants emit KV<K, Failure>.
type Failure struct {
	Example inference.Example
	Kind    FailureKind
	Err     string
	Stage   Stage
	ModelID inference.ModelID
}

// maxMessage bounds the error message in Failure.String and in the
// summaries of failures, so that a log line stays readable when a message
// carries a panic's frames or a whole example.
const maxMessage = 500

// String describes the failure on one bounded line: the element with its
// first values, the stage, the kind and the message, as in
//
//	{ids: int64[128] [101 2023 2003 1037 …]} failed at stage batch (element_type): inference: input "ids": …
//
// The message is cut at maxMessage bytes; Err holds it whole.
func (f Failure) String() string {
	return fmt.Sprintf("%s failed at stage %s (%s): %s", formatExample(f.Example), f.Stage, f.Kind, truncate(f.Err, maxMessage))
}

// How much of an example formatExample shows: enough values to find the
// element in the input, few enough for one log line.
const (
	maxValuesShown  = 4
	maxTensorsShown = 8
)

// formatExample prints an example's tensors by name with their first
// values, as in "{ids: int64[128] [101 2023 2003 1037 …], x: float32[3] [0.1 0.2 0.3]}":
// at most maxValuesShown values of each of at most maxTensorsShown tensors.
func formatExample(ex inference.Example) string {
	var b strings.Builder
	b.WriteByte('{')
	names := slices.Sorted(maps.Keys(ex))
	for i, name := range names {
		if i == maxTensorsShown {
			fmt.Fprintf(&b, ", … %d more", len(names)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		t := ex[name]
		fmt.Fprintf(&b, "%s: %v", truncate(name, 64), t)
		if vals := firstValues(t, maxValuesShown); vals != "" {
			b.WriteString(" " + vals)
		}
	}
	b.WriteByte('}')
	return b.String()
}

// firstValues prints the first n values of t, "[1 2 3 …]", or "" for a
// tensor without data (the zero Tensor).
func firstValues(t inference.Tensor, n int) string {
	v := reflect.ValueOf(t.Values())
	if !v.IsValid() {
		return ""
	}
	format := "%v"
	if t.DType() == inference.String {
		format = "%q"
	}
	if v.Len() <= n {
		return fmt.Sprintf(format, v.Interface())
	}
	return strings.TrimSuffix(fmt.Sprintf(format, v.Slice(0, n).Interface()), "]") + " …]"
}

// truncate cuts s to at most n bytes, at a rune boundary, marking the cut
// with "…".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
