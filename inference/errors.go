package inference

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error the runtime returns for one of these causes
// wraps the matching value, so callers can test it with errors.Is and still
// read the model, node, input and shape in the message. Each cause has one
// sentinel: an index out of range is not a shape mismatch, an input the
// model does not take is not a missing one.
var (
	// ErrIndexOutOfRange: an index in the data lies outside the axis it
	// indexes (Gather, GatherElements, GatherND, ScatterND, an embedding
	// lookup on token ids past the vocabulary): the element is wrong, not
	// the model.
	ErrIndexOutOfRange = errors.New("inference: index out of range")
	// ErrDivisionByZero: an integer Div or Mod divides by an element that
	// is 0, in the data (the element is wrong) or in the model's
	// constants.
	ErrDivisionByZero = errors.New("inference: division by zero")
	// ErrUnexpectedInput: an example carries a tensor under a name the model
	// has no input for.
	ErrUnexpectedInput = errors.New("inference: unexpected input")
	// ErrMissingInput: the model has an input that the example or the
	// feeds do not give.
	ErrMissingInput = errors.New("inference: missing input")
	// ErrMissingOutput: an output asked for by name is not among what the
	// model returned, or a model with several outputs was asked for its
	// one output.
	ErrMissingOutput = errors.New("inference: missing output")
	// ErrUnsupportedOp: the model uses an operator, attribute or element type
	// that the chosen backend does not implement.
	ErrUnsupportedOp = errors.New("inference: unsupported operator")
	// ErrUnsupportedType: the model uses an element type that a Tensor
	// does not hold (complex numbers, float8, int4 and the other ONNX
	// types DType lacks), or gives an operator a type its kernel does not
	// compute (an Add of strings). It is also ErrUnsupportedOp to
	// errors.Is, which asks whether a backend can run a model at all.
	ErrUnsupportedType error = unsupportedType{}
	// ErrShape: a tensor's shape (rank, dimensions) does not match what the
	// model or operation wants, or a tensor's data length disagrees with
	// its shape.
	ErrShape = errors.New("inference: shape mismatch")
	// ErrType: a tensor's element type is not the one wanted (float32 token
	// ids for a model that takes int64).
	ErrType = errors.New("inference: element type mismatch")
	// ErrNoDevice: the requested device is not registered in this binary or
	// does not answer on this machine.
	ErrNoDevice = errors.New("inference: no device")
	// ErrDeviceFailed: the device faulted in a way that leaves it unusable
	// for the rest of the process: on a GPU a sticky error (an illegal
	// address or instruction, a failed launch, an uncorrectable ECC error,
	// the MPS server ending its client) has destroyed the context. No
	// later call on it can succeed, whatever its input; only a new process
	// gets a working device. RunInference fails the bundle and ends the
	// worker process, so that the runner restarts it and retries the
	// bundle (see its package doc).
	ErrDeviceFailed = errors.New("inference: device failed")
	// ErrOutOfMemory: the device could not allocate what a batch needs.
	// RunInference answers it by splitting the batch.
	ErrOutOfMemory = errors.New("inference: out of memory")
	// ErrBadModel: the model file or its description is malformed or
	// inconsistent; loading it fails.
	ErrBadModel = errors.New("inference: bad model")
)

// unsupportedType is ErrUnsupportedType: an error of its own that is
// ErrUnsupportedOp too.
type unsupportedType struct{}

func (unsupportedType) Error() string { return "inference: unsupported element type" }

func (unsupportedType) Is(target error) bool { return target == ErrUnsupportedOp }

// UnsupportedOpError says which operator a backend cannot run, and why. It
// wraps ErrUnsupportedOp, or ErrUnsupportedType where what is missing is an
// element type. Op is the operator type alone, for reports that list what
// is missing.
type UnsupportedOpError struct {
	Node   string // the node's name, if known
	Op     string // the operator type, as "Conv" or "ai.onnx.ml.TreeEnsembleClassifier"
	Opset  int64  // the opset version the model imports, if known
	Detail string // what exactly is missing: an attribute value, an element type
	Type   bool   // what is missing is an element type (Detail names it)
}

func (e *UnsupportedOpError) Error() string {
	msg := "inference: operator " + e.Op
	if e.Opset > 0 {
		msg += fmt.Sprintf(" (opset %d)", e.Opset)
	}
	if e.Node != "" {
		msg += fmt.Sprintf(" at node %q", e.Node)
	}
	msg += " is not supported"
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

func (e *UnsupportedOpError) Unwrap() error {
	if e.Type {
		return ErrUnsupportedType
	}
	return ErrUnsupportedOp
}
