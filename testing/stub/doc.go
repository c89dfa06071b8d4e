// Package stub provides deterministic CPU models for pipeline tests on the
// direct runner and prism, registered as format "stub". They need no model
// file: a Spec made by Echo, Affine or Shaped carries the whole model in
// its options, so it travels to workers like any other Spec.
//
// It is for pipeline authors' tests: a stub stands in for a real model so
// that a pipeline's own logic (parsing, keys, failures, sinks) is tested
// fast and deterministically.
//
// Echo and Affine take one float32 input "x" of shape [batch, in] and
// return one float32 output "y" of shape [batch, out]. Shaped takes and
// returns what the test declares, so that a pipeline for a real model
// (int64 token ids and a mask in, logits out) is tested with its own
// tensors:
//
//	spec := stub.Shaped(
//		stub.Input("input_ids", inference.Int64, -1, 128),
//		stub.Input("attention_mask", inference.Int64, -1, 128),
//		stub.Output("logits", inference.Float32, -1, 128, 9),
//	)
//
// Its outputs follow one documented rule (element j of a row is the sum of
// the row's input values plus j), so a test can predict every value and
// see that each result came from its own element. The options that the
// With…, FailIf… functions and Tag add work on every kind.
//
// # Failures on chosen values
//
// FailIfAny and FailIfOutside fail a batch that holds a row in which any
// value of a named input equals a value, or lies outside [lo, hi], with
// an error that names the row and wraps the inference sentinel the test
// chooses: an id past the vocabulary fails as a real model's Gather does.
//
//	spec = stub.FailIfOutside(spec, "input_ids", 0, 30521, inference.ErrIndexOutOfRange)
//
// RunInference splits a failed batch until the row fails alone, so
// exactly the matching elements reach the failures.
//
// # Faults
//
// A stub fails the way real models do, on chosen rows: a batch that holds
// a chosen row fails with an error (Fail), panics (Panic), blocks until its
// context is done (Hang), or blocks ignoring its context, as a deadlocked
// model does (Deadlock). A row is chosen by its first value x[0] (for a
// Shaped model, the first value of its first input):
//
//	spec := stub.WithFault(stub.Echo(2), stub.Panic, -1)   // rows with x[0] = -1
//	spec = stub.WithFaultRate(spec, stub.Deadlock, 0.01)   // and about 1% of the values of x[0]
//
// WithFault chooses the rows whose x[0] equals a marker. WithFaultRate
// chooses a fixed fraction of the possible values of x[0] by a hash of
// its bits and of the fault, so the same rows are chosen in every run,
// on every runner and whatever the batching; Selected says whether a row
// is chosen, so that a test can compute what it expects. A Spec can hold
// a marker and a rate for each fault; a batch does the fault of its first
// chosen row, and a row chosen for several faults does the first of
// Deadlock, Hang, Panic, Fail.
//
// WithMemoryUse makes a run need memory in proportion to its rows' x[0],
// and refuse (with an *inference.ResourceError) a run over the memory
// budget of its context (inference.WithMemoryBudget), as the runtime
// refuses a kernel's allocation over the budget.
//
// Hang and Deadlock are for tests of RunInference's InferenceTimeout. A
// Deadlock run returns only when its model is closed; RunInference keeps
// the model of an abandoned run open until the run returns, so under
// RunInference it stays blocked for the life of the test process.
package stub
