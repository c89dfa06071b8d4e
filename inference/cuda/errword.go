package cuda

import (
	"encoding/binary"
	"fmt"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/internal/kernels"
)

// The error channel. A kernel that finds data the CPU backend reports as an
// error (an index out of range, an integer divisor of 0, a sequence length
// outside the sequence) records the run's
// first failure in its workspace's error word (kernels/common.cuh report)
// and goes on with a defined result; the executor reads the word back and
// returns the error, naming the node.
//
// The word is the first errorWordBytes of every workspace allocation (the
// plan's values start errorWordSpace bytes in), so it does not move when
// plans of other sizes take turns in the workspace. Its costs, per run of
// a plan that has a kernel that can fail (a site); a plan without sites
// pays nothing:
//
//   - no launch and no copy to clear it: the word is zero between runs.
//     A new workspace's word is cleared (one synchronous copy of zeros) by
//     the first run that has sites, and so is the word of a workspace whose
//     last run failed (it stays set: wordClear says which);
//   - one asynchronous device→host copy of errorWordBytes, queued after
//     the outputs' copies into the same pinned staging buffer and waited
//     for by the same Sync.
//
// A run that stops early (a failed step, a cancelled context) reads the
// word once more after its Sync: a failure the device recorded came first
// in the plan's order, so it is the error returned.
const (
	errorWordBytes = 32          // four int64: site, kind, value, bound
	errorWordSpace = graph.Align // the word's room at the workspace's start
)

// zeroWord clears an error word; it is never written.
var zeroWord [errorWordBytes]byte

// errorSite is a node whose kernel may report on the error word: what the
// error message says of it.
type errorSite struct {
	node *graph.Node
	what string // the operand at fault: `indices "ids" into data [30522 768], axis 0`
}

// errorWord returns the error-channel parameters of a kernel of this node
// that checks its data on the device: the word's address and the node's
// site number. what names the operand the kernel checks.
func (l *lowering) errorWord(what string) []kernelArg {
	l.sites = append(l.sites, errorSite{node: l.Node.Node, what: what})
	return []kernelArg{{ptr: true, at: loc{reg: regErrorWord}}, intArg(len(l.p.sites) + len(l.sites))}
}

// noErrorWord are the error-channel parameters of a kernel whose data the
// host checked at plan time: a null word, which the kernel never touches.
var noErrorWord = []kernelArg{intArg(0), intArg(0)}

// deviceError returns the error the word w (as read back from the device)
// records, or nil when it records none.
func (p *plan) deviceError(w []byte) error {
	var v [4]int64
	for i := range v {
		v[i] = int64(binary.LittleEndian.Uint64(w[8*i:]))
	}
	site, kind, value, bound := v[0], v[1], v[2], v[3]
	if site == 0 {
		return nil
	}
	if site < 0 || site > int64(len(p.sites)) {
		return fmt.Errorf("cuda: the device reported an error at site %d of a plan of %d", site, len(p.sites))
	}
	s := p.sites[site-1]
	switch kind {
	case kernels.E_INDEX:
		return fmt.Errorf("cuda: node %v: %s: index %d out of range for dimension %d: %w", s.node, s.what, value, bound, inference.ErrIndexOutOfRange)
	case kernels.E_DIVZERO:
		return fmt.Errorf("cuda: node %v: %s holds 0 (output element %d): %w", s.node, s.what, value, inference.ErrDivisionByZero)
	case kernels.E_RANGE:
		return fmt.Errorf("cuda: node %v: %s holds %d, outside [0, %d]: %w", s.node, s.what, value, bound, inference.ErrShape)
	}
	return fmt.Errorf("cuda: node %v: %s: the device reported error kind %d (value %d, bound %d)", s.node, s.what, kind, value, bound)
}
