package cpu

import (
	"context"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// Control flow: the Loop and Scan operators, which the executor runs
// through runControl (exec.go, where If is).

// scan runs ONNX Scan: the body runs once per slice of the scan inputs along
// their scan axis, threading the state variables through, and the scan
// outputs stack the body's per-iteration outputs. Scan-9 and later scan
// axis 0 of unbatched inputs; Scan-8 has a leading batch axis, scans axis 1
// and runs each batch entry on its own. Scan axes other than those are not
// implemented, nor are Scan-8 sequence_lens shorter than the sequence.
func scan(ctx context.Context, n opsem.Node, in []inference.Tensor, outer map[string]inference.Tensor) ([]inference.Tensor, error) {
	a, ok := n.Attrs["body"]
	if !ok || a.Graph == nil {
		return nil, fmt.Errorf("no body: %w", inference.ErrBadModel)
	}
	body := a.Graph
	m := int(n.Int("num_scan_inputs", 0))
	if n.Opset < 9 {
		return scan8(ctx, n, body, m, in, outer)
	}
	nState := len(in) - m
	nScanOut := len(body.Outputs) - nState
	if m <= 0 || nState < 0 || len(body.Inputs) != len(in) || nScanOut < 0 {
		return nil, fmt.Errorf("%d inputs, num_scan_inputs %d, body takes %d and gives %d: %w",
			len(in), m, len(body.Inputs), len(body.Outputs), inference.ErrBadModel)
	}
	for _, attr := range []string{"scan_input_axes", "scan_output_axes"} {
		for _, ax := range n.Ints(attr, nil) {
			if ax != 0 {
				return nil, n.Unsupported("%s other than 0", attr)
			}
		}
	}
	inDirs := n.Ints("scan_input_directions", make([]int64, m))
	outDirs := n.Ints("scan_output_directions", make([]int64, nScanOut))
	return scanLoop(ctx, n, body, in[:nState], in[nState:], inDirs, outDirs, outer)
}

// scan8 runs Scan-8: inputs are sequence_lens (optional), the states and
// the scan inputs, all with a leading batch axis.
func scan8(ctx context.Context, n opsem.Node, body *graph.Graph, m int, in []inference.Tensor, outer map[string]inference.Tensor) ([]inference.Tensor, error) {
	if m <= 0 || len(in) < 1+m {
		return nil, fmt.Errorf("%d inputs, num_scan_inputs %d: %w", len(in), m, inference.ErrBadModel)
	}
	lens, vars := in[0], in[1:]
	nState := len(vars) - m
	nScanOut := len(body.Outputs) - nState
	if len(body.Inputs) != len(vars) || nScanOut < 0 {
		return nil, fmt.Errorf("%d inputs after sequence_lens, num_scan_inputs %d, body takes %d and gives %d: %w",
			len(vars), m, len(body.Inputs), len(body.Outputs), inference.ErrBadModel)
	}
	dirs := n.Ints("directions", make([]int64, m))
	perBatch := make([][]inference.Tensor, len(vars))
	batch := -1
	for i, v := range vars {
		parts, err := unstackUnder(n.Run, v)
		if err != nil {
			return nil, fmt.Errorf("input %d: %w", i+1, err)
		}
		if batch >= 0 && len(parts) != batch {
			return nil, fmt.Errorf("inputs have batch sizes %d and %d: %w", batch, len(parts), inference.ErrShape)
		}
		batch = len(parts)
		perBatch[i] = parts
	}
	if present(lens) {
		l, err := opsem.Int64s(lens)
		if err != nil {
			return nil, err
		}
		for b, v := range l {
			if steps := perBatch[nState][b].Shape()[0]; int(v) != steps {
				return nil, n.Unsupported("sequence_lens[%d] = %d shorter than the sequence (%d)", b, v, steps)
			}
		}
	}
	results := make([][]inference.Tensor, len(body.Outputs))
	for b := range batch {
		args := make([]inference.Tensor, len(vars))
		for i := range vars {
			args[i] = perBatch[i][b]
		}
		outs, err := scanLoop(ctx, n, body, args[:nState], args[nState:], dirs, make([]int64, nScanOut), outer)
		if err != nil {
			return nil, fmt.Errorf("batch entry %d: %w", b, err)
		}
		for k, o := range outs {
			results[k] = append(results[k], o)
		}
	}
	res := make([]inference.Tensor, len(results))
	for k, parts := range results {
		t, err := stackUnder(n, parts)
		if err != nil {
			return nil, fmt.Errorf("output %d: %w", k, err)
		}
		res[k] = t
	}
	return res, nil
}

// unstackUnder is inference.Unstack of t, its records (one Tensor per
// entry of t's leading axis, sharing t's elements and the shape of one)
// claimed under r first: a tensor without elements can have any number.
func unstackUnder(r *limit.Run, t inference.Tensor) ([]inference.Tensor, error) {
	if t.Rank() > 0 {
		if _, err := limit.Claim[inference.Tensor](r, t.Dim(0)); err != nil {
			return nil, err
		}
	}
	return inference.Unstack(t)
}

// stackUnder is inference.Stack of parts, the stacked copy claimed under
// n's run first.
func stackUnder(n opsem.Node, parts []inference.Tensor) (inference.Tensor, error) {
	var bytes int64
	for _, t := range parts {
		bytes += t.ByteSize()
	}
	if err := n.Run.Reserve(func() string { return "the stacked scan outputs of " + n.OpType }, bytes); err != nil {
		return inference.Tensor{}, err
	}
	return inference.Stack(parts)
}

// scanLoop runs the body over axis 0 of the scan inputs and returns the
// final states followed by the stacked scan outputs.
func scanLoop(ctx context.Context, n opsem.Node, body *graph.Graph, states, scanIn []inference.Tensor, inDirs, outDirs []int64, outer map[string]inference.Tensor) ([]inference.Tensor, error) {
	nState, m := len(states), len(scanIn)
	if len(body.Inputs) != nState+m {
		return nil, fmt.Errorf("body takes %d inputs, scan gives %d: %w", len(body.Inputs), nState+m, inference.ErrBadModel)
	}
	nScanOut := len(body.Outputs) - nState
	slicesIn := make([][]inference.Tensor, m)
	steps := -1
	for j, t := range scanIn {
		parts, err := unstackUnder(n.Run, t)
		if err != nil {
			return nil, fmt.Errorf("scan input %d: %w", j, err)
		}
		if j < len(inDirs) && inDirs[j] == 1 {
			slices.Reverse(parts)
		}
		if steps >= 0 && len(parts) != steps {
			return nil, fmt.Errorf("scan inputs have %d and %d steps: %w", steps, len(parts), inference.ErrShape)
		}
		steps = len(parts)
		slicesIn[j] = parts
	}
	state := slices.Clone(states)
	collected := make([]scanOutput, nScanOut)
	kept := iterationBudget(n)
	frame := newBodyFrame()
	feeds := make(map[string]inference.Tensor, len(body.Inputs))
	for i := range steps {
		for k, v := range body.Inputs {
			if k < nState {
				feeds[v.Name] = state[k]
			} else {
				feeds[v.Name] = slicesIn[k-nState][i]
			}
		}
		outs, err := frame.run(ctx, n.Run, body, feeds, outer)
		if err != nil {
			return nil, fmt.Errorf("iteration %d: %w", i, err)
		}
		copy(state, outs[:nState])
		for k := range nScanOut {
			collected[k].add(outs[nState+k])
		}
		if err := kept.next(state, outs[nState:], collected); err != nil {
			return nil, fmt.Errorf("iteration %d: %w", i, err)
		}
	}
	res := slices.Clone(state)
	if err := kept.stack(); err != nil {
		return nil, err
	}
	for k, c := range collected {
		parts := c.all()
		if k < len(outDirs) && outDirs[k] == 1 {
			slices.Reverse(parts)
		}
		if len(parts) == 0 {
			return nil, n.Unsupported("scan with zero iterations")
		}
		t, err := inference.Stack(parts)
		if err != nil {
			return nil, fmt.Errorf("scan output %d: %w", k, err)
		}
		res = append(res, t)
	}
	return res, nil
}

// loop runs ONNX Loop: inputs M (optional trip count), cond (optional) and
// the initial loop-carried values; the body takes (iteration, cond, values…)
// and returns (cond, values…, scan outputs…); the body's condition counts
// only when the cond input is given. The outputs are the final
// values and each scan output stacked over the iterations. A loop that runs
// zero times with scan outputs is not implemented (their shape is unknown).
func loop(ctx context.Context, n opsem.Node, in []inference.Tensor, outer map[string]inference.Tensor) ([]inference.Tensor, error) {
	a, ok := n.Attrs["body"]
	if !ok || a.Graph == nil {
		return nil, fmt.Errorf("no body: %w", inference.ErrBadModel)
	}
	body := a.Graph
	if len(in) < 2 || len(body.Inputs) != len(in) {
		return nil, fmt.Errorf("%d inputs, body takes %d (want 2 more than the loop-carried values): %w", len(in), len(body.Inputs), inference.ErrBadModel)
	}
	nCarried := len(in) - 2
	nScanOut := len(body.Outputs) - 1 - nCarried
	if nScanOut < 0 {
		return nil, fmt.Errorf("body returns %d outputs for %d loop-carried values: %w", len(body.Outputs), nCarried, inference.ErrBadModel)
	}
	trips := int64(math.MaxInt64)
	if present(in[0]) {
		v, err := opsem.Int64s(in[0])
		if err != nil || len(v) != 1 {
			return nil, fmt.Errorf("trip count %v is not one integer: %w", in[0], inference.ErrShape)
		}
		trips = v[0]
	}
	cond := true
	if present(in[1]) {
		var err error
		if cond, err = scalarBool(in[1]); err != nil {
			return nil, fmt.Errorf("condition: %w", err)
		}
	}
	if !present(in[0]) && !present(in[1]) {
		return nil, n.Unsupported("a loop with neither trip count nor condition never ends")
	}
	carried := slices.Clone(in[2:])
	collected := make([]scanOutput, nScanOut)
	kept := iterationBudget(n)
	condValue := in[1]
	frame := newBodyFrame()
	feeds := make(map[string]inference.Tensor, len(body.Inputs))
	for i := int64(0); i < trips && cond; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		iter, _ := inference.New([]int{}, []int64{i})
		if !present(condValue) {
			condValue, _ = inference.New([]int{}, []bool{true})
		}
		feeds[body.Inputs[0].Name], feeds[body.Inputs[1].Name] = iter, condValue
		for k, v := range body.Inputs[2:] {
			feeds[v.Name] = carried[k]
		}
		outs, err := frame.run(ctx, n.Run, body, feeds, outer)
		if err != nil {
			return nil, fmt.Errorf("iteration %d: %w", i, err)
		}
		if present(in[1]) { // without a cond input the body's condition is ignored (a for loop)
			condValue = outs[0]
			if cond, err = scalarBool(outs[0]); err != nil {
				return nil, fmt.Errorf("iteration %d: condition: %w", i, err)
			}
		}
		copy(carried, outs[1:1+nCarried])
		for k := range nScanOut {
			collected[k].add(outs[1+nCarried+k])
		}
		if err := kept.next(carried, outs[1+nCarried:], collected); err != nil {
			return nil, fmt.Errorf("iteration %d: %w", i, err)
		}
	}
	res := carried
	if err := kept.stack(); err != nil {
		return nil, err
	}
	for k, c := range collected {
		parts := c.all()
		if len(parts) == 0 {
			return nil, n.Unsupported("scan output %d of a loop that ran zero times", k)
		}
		t, err := inference.Stack(parts)
		if err != nil {
			return nil, fmt.Errorf("scan output %d: %w", k, err)
		}
		res = append(res, t)
	}
	return res, nil
}

// bodyFrame runs a loop's body again and again in one frame: the body's
// schedule is made once, and its slots and the outputs' slice are reused,
// so that an iteration leaves the collector only what the body computed.
// (A body that runs millions of times would otherwise leave a few
// kilobytes each time, which a process near its memory limit cannot
// collect as fast.)
type bodyFrame struct{ st runState }

func newBodyFrame() *bodyFrame { return &bodyFrame{} }

// run runs body once; its outputs stay valid until the next run. outer
// is the same at every run of a frame.
func (f *bodyFrame) run(ctx context.Context, r *limit.Run, body *graph.Graph, feeds, outer map[string]inference.Tensor) ([]inference.Tensor, error) {
	if f.st.sched == nil {
		f.st.sched = newSchedule(body, outer)
	}
	return runObserved(ctx, r, body, &f.st, feeds, outer, nil)
}

// scanChunk is how many iterations' values a chunk of a scanOutput holds.
const scanChunk = 4096

// scanOutput collects a scan output's values, one per iteration, in
// chunks: a slice that grew by copying would leave its old array to the
// collector, nearly as large as what it keeps, at each growth.
type scanOutput struct {
	chunks [][]inference.Tensor
	n      int
}

func (c *scanOutput) add(t inference.Tensor) {
	if k := len(c.chunks); k == 0 || len(c.chunks[k-1]) == scanChunk {
		c.chunks = append(c.chunks, make([]inference.Tensor, 0, scanChunk))
	}
	last := &c.chunks[len(c.chunks)-1]
	*last = append(*last, t)
	c.n++
}

// records is the bytes the chunks hold besides the values' elements and
// shapes.
func (c *scanOutput) records() int64 {
	return int64(len(c.chunks))*scanChunk*limit.TensorRecord + int64(cap(c.chunks))*int64(unsafe.Sizeof([]inference.Tensor(nil)))
}

// all is the values in order, in one slice.
func (c *scanOutput) all() []inference.Tensor {
	out := make([]inference.Tensor, 0, c.n)
	for _, chunk := range c.chunks {
		out = append(out, chunk...)
	}
	return out
}

// iterations counts what a loop keeps against its run's budget, at the
// size the heap holds it (limit.Held): the values carried into the next
// iteration, and the scan outputs collected so far with the slices that
// hold them. What an iteration computed and dropped is released.
type iterations struct {
	n       opsem.Node
	mark    int64 // the run's bytes in use before the first iteration
	scanned int64 // the scan outputs collected: limit.Held of each
	stacked int64 // their ByteSize: what stacking them allocates
	values  int64 // how many were collected
}

func iterationBudget(n opsem.Node) *iterations {
	return &iterations{n: n, mark: n.Run.InUse()}
}

// next accounts for an iteration that carries the values carried and adds
// the scan outputs scanned to collected (each scan output's slice of the
// iterations so far), failing once they pass the budget.
func (it *iterations) next(carried, scanned []inference.Tensor, collected []scanOutput) error {
	it.n.Run.Reset(it.mark)
	for _, t := range scanned {
		it.scanned += limit.Held(t)
		it.stacked += t.ByteSize()
	}
	it.values += int64(len(scanned))
	keep := it.scanned
	for i := range collected {
		keep += collected[i].records()
	}
	for _, t := range carried {
		keep += limit.Held(t)
	}
	return it.n.Run.Reserve(func() string { return "the values and scan outputs " + it.n.OpType + " keeps" }, keep)
}

// stack reserves the stacked scan outputs, a second copy of the collected
// ones, and the slice of their records that stacking each reads.
func (it *iterations) stack() error {
	return it.n.Run.Reserve(func() string { return "the stacked scan outputs of " + it.n.OpType }, it.stacked+it.values*limit.TensorRecord)
}
