// Package opsem holds the ONNX semantics that the backends must agree on,
// written once: attribute defaults per opset, axis normalisation,
// broadcasting, slice ranges, convolution and pooling geometry, Resize's
// scales and policies, and the output shapes of the operators. The CPU
// backend computes with these rules and the GPU backend plans its launches
// with them, so the two cannot drift apart.
//
// It is internal to the runtime: backends (inference/cpu, inference/cuda)
// and graph passes (inference/graph/passes) import it. A function here
// reads a node's attributes and the shapes and constant operands it is
// given, and returns what the operator does, or an error that says what is
// wrong: one wrapping inference.ErrShape for operands or attributes the
// operator's rules reject, an *inference.UnsupportedOpError for a valid case
// that the runtime does not implement.
package opsem

import (
	"fmt"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/limit"
)

// Node is an operator application as its semantics see it: the graph node
// (attributes, names) and the version of ai.onnx the model imports, which
// selects the operator's version (Softmax-1 flattens at axis, Softmax-13
// works along one axis, …).
//
// Run is the limits of the run the node is part of: kernels allocate
// through limit.Make with it and poll it in loops whose work their output's
// size does not bound. It is nil outside a run (shape rules, planning),
// which checks sizes against the default budget.
//
// Prepared is what the backend prepared for the node when it compiled the
// model (the CPU's packed weights), or nil; opsem does not read it.
//
// Memo is what the kernel keeps from one run of the node to the next
// (Plan, Output), or nil.
type Node struct {
	*graph.Node
	Opset    int64
	Run      *limit.Run
	Prepared any
	Memo     *Memo
}

// Unsupported is the error for a case of n the runtime does not implement
// (an attribute value, an element type).
func (n Node) Unsupported(format string, args ...any) error {
	return &inference.UnsupportedOpError{Node: n.Name, Op: n.OpType, Opset: n.Opset, Detail: fmt.Sprintf(format, args...)}
}

// UnsupportedType is the error of n naming, in what, an ONNX element type
// (a TensorProto.DataType number) that a Tensor does not hold: it wraps
// inference.ErrUnsupportedType.
func (n Node) UnsupportedType(what string, code int64) error {
	return &inference.UnsupportedOpError{Node: n.Name, Op: n.OpType, Opset: n.Opset,
		Detail: what + " " + inference.ONNXTypeName(code), Type: true}
}
