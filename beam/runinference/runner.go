package runinference

import (
	"context"
	"errors"

	"github.com/beamml/beamml/inference"
)

// runner calls Model.Run on a goroutine of its own, one batch at a time,
// so that a model that ignores its deadline does not block the bundle.
// The goroutine serves every batch of its batcher: starting one per batch
// cost about 90ns an element (the scheduler wakes an idle processor for
// each new goroutine). A run that is abandoned keeps its runner, which
// ends when the run returns; the batcher's next batch starts a new one
// (batcher.runModel).
type runner struct {
	jobs    chan runJob
	results chan runResult // buffered: an abandoned run's result never blocks the goroutine
}

// runJob is one batch for a runner.
type runJob struct {
	ctx    context.Context
	model  inference.Model
	inputs map[string]inference.Tensor
}

// runResult is what Model.Run returned, or that it was abandoned.
type runResult struct {
	outputs   map[string]inference.Tensor
	err       error
	abandoned bool // the run did not return in time, and still holds its runner
	ended     bool // the runner's goroutine has ended (runtime.Goexit)
}

func newRunner() *runner {
	r := &runner{jobs: make(chan runJob), results: make(chan runResult, 1)}
	go r.serve()
	return r
}

// serve runs jobs until the runner is closed, or until a model calls
// runtime.Goexit, which ends the goroutine.
func (r *runner) serve() {
	for j := range r.jobs {
		r.serveOne(j)
	}
}

// serveOne calls j.model.Run and sends what it returned. A panic becomes an
// error wrapping inference.ErrPanic; a runtime.Goexit becomes an error too,
// never an empty result, and a result that says the runner has ended.
func (r *runner) serveOne(j runJob) {
	var res runResult
	returned := false
	defer func() {
		if p := recover(); p != nil {
			res, returned = runResult{err: inference.Recovered("Model.Run", p)}, true
		}
		if !returned {
			res = runResult{err: errors.New("Model.Run ended its goroutine (runtime.Goexit) without returning"), ended: true}
		}
		r.results <- res
	}()
	res.outputs, res.err = j.model.Run(j.ctx, j.inputs)
	returned = true
}

// start sends j to the runner, whose result comes on r.results.
func (r *runner) start(j runJob) { r.jobs <- j }

// close ends the runner's goroutine once its current run, if any, returns.
func (r *runner) close() { close(r.jobs) }
