// Package stub provides deterministic CPU models for pipeline tests on the
// direct runner and prism, registered as format "stub". They need no model
// file: a Spec made by Echo or Affine carries the whole model in its options,
// so it travels to workers like any other Spec.
//
// It is for pipeline authors' tests: a stub stands in for a real model so
// that a pipeline's own logic (parsing, keys, failures, sinks) is tested
// fast and deterministically.
//
// Every stub model takes one float32 input "x" of shape [batch, in] and
// returns one float32 output "y" of shape [batch, out]. The options that
// the With… functions and Tag add work on either kind.
//
// # Faults
//
// A stub fails the way real models do, on chosen rows: a batch that holds
// a chosen row fails with an error (Fail), panics (Panic), blocks until its
// context is done (Hang), or blocks ignoring its context, as a deadlocked
// model does (Deadlock). A row is chosen by its first value x[0]:
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
