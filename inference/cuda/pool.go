package cuda

import (
	"errors"
	"fmt"
	"sync"

	"github.com/beamml/beamml/inference"
)

// workspace is what one Run holds: device memory for the error word and
// the plan's values, a stream, and pinned staging buffers for the inputs
// and outputs (and the error word).
type workspace struct {
	ptr  Ptr // the error word (errword.go), then the plan's values
	size int64
	// wordClear is true while the error word is known to be zero: a run
	// whose plan may report clears it first when it is not.
	wordClear bool
	stream    Stream
	hostIn    []byte
	hostOut   []byte
	args      []uint64 // a launch's arguments, reused from launch to launch
	// graphs holds, per plan, the CUDA graph of a run of the plan in this
	// workspace (graph.go); runs counts the plan's runs here until then.
	graphs map[*plan]Graph
	runs   map[*plan]int
}

// pool keeps the workspaces of a model. Runs take one and put it back, so
// in steady state nothing is allocated. When the device has no memory for
// another, a Run waits for one to come back; a single Run that does not
// fit fails with inference.ErrOutOfMemory (RunInference then splits the
// batch).
type pool struct {
	dev   Device
	mu    sync.Mutex
	cond  *sync.Cond
	idle  []*workspace
	busy  int
	count int
}

func (p *pool) get(size, in, out int64) (*workspace, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		best := -1
		for i, w := range p.idle {
			if w.size >= size && int64(len(w.hostIn)) >= in && int64(len(w.hostOut)) >= out &&
				(best < 0 || w.size < p.idle[best].size) {
				best = i
			}
		}
		if best >= 0 {
			w := p.idle[best]
			p.idle = append(p.idle[:best], p.idle[best+1:]...)
			p.busy++
			return w, nil
		}
		w, err := p.alloc(size, in, out)
		if err == nil {
			p.busy++
			p.count++
			return w, nil
		}
		if !errors.Is(err, inference.ErrOutOfMemory) {
			return nil, err
		}
		switch {
		case len(p.idle) > 0: // too small for this run: make room
			w := p.idle[0]
			p.idle = p.idle[1:]
			p.count--
			if err := p.free(w); err != nil {
				return nil, err
			}
		case p.busy > 0: // wait for a running batch to finish
			p.cond.Wait()
		default:
			return nil, err
		}
	}
}

func (p *pool) put(w *workspace) {
	p.mu.Lock()
	p.idle = append(p.idle, w)
	p.busy--
	p.mu.Unlock()
	p.cond.Broadcast()
}

func (p *pool) alloc(size, in, out int64) (*workspace, error) {
	w := &workspace{size: size}
	var err error
	if w.ptr, err = p.dev.Alloc(size); err != nil {
		return nil, err
	}
	if w.stream, err = p.dev.NewStream(); err != nil {
		p.dev.Free(w.ptr)
		return nil, fmt.Errorf("new stream: %w", err)
	}
	if w.hostIn, err = p.dev.AllocHost(max(in, 1)); err == nil {
		w.hostOut, err = p.dev.AllocHost(max(out, 1))
	}
	if err != nil {
		p.free(w)
		return nil, fmt.Errorf("pinned staging buffers: %w", err)
	}
	return w, nil
}

func (p *pool) free(w *workspace) error {
	var errs []error
	for pl := range w.graphs {
		errs = append(errs, w.dropGraph(p.dev, pl))
	}
	if w.hostIn != nil {
		errs = append(errs, p.dev.FreeHost(w.hostIn))
	}
	if w.hostOut != nil {
		errs = append(errs, p.dev.FreeHost(w.hostOut))
	}
	if w.stream != nil {
		errs = append(errs, p.dev.DestroyStream(w.stream))
	}
	errs = append(errs, p.dev.Free(w.ptr))
	return errors.Join(errs...)
}

func (p *pool) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for _, w := range p.idle {
		errs = append(errs, p.free(w))
	}
	p.count -= len(p.idle)
	p.idle = nil
	return errors.Join(errs...)
}
