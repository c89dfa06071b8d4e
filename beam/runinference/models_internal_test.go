package runinference

import (
	"context"
	"testing"
	"time"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/testing/stub"
)

// The pool holds at most max models, evicts the least recently used one
// that no batch runs on, and makes a batch wait while every model runs.
func TestModelPoolEvictsLeastRecentlyUsedIdleModel(t *testing.T) {
	ctx := context.Background()
	p := poolFor(t.Name(), 2)
	specs := []inference.Spec{stub.Tag(stub.Echo(2), t.Name()+"a"), stub.Tag(stub.Echo(2), t.Name()+"b"), stub.Tag(stub.Echo(2), t.Name()+"c")}
	a, err := p.borrow(ctx, specs[0], 8)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.borrow(ctx, specs[1], 8)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *lease)
	go func() {
		l, err := p.borrow(ctx, specs[2], 8) // waits: a and b are running
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	select {
	case <-got:
		t.Fatal("a third model was lent while two were running with MaxModelsPerWorker 2")
	case <-time.After(50 * time.Millisecond):
	}
	b.done()
	a.done() // a is now the most recently used: b goes
	c := <-got
	c.done()
	if st := p.Stats(); st.Loads != 3 || st.Evictions != 1 || st.Loaded != 2 {
		t.Errorf("stats %+v, want 3 loads, 1 eviction, 2 loaded", st)
	}
	if inference.Shared().StatsFor(specs[1]).Closes != 1 {
		t.Errorf("the evicted model was not closed at once: %+v", inference.Shared().StatsFor(specs[1]))
	}
	if _, ok := p.entries[specs[0].Key()]; !ok {
		t.Errorf("the pool evicted the most recently used model, not the least")
	}
	l, err := p.borrow(ctx, specs[0], 8)
	if err != nil {
		t.Fatal(err)
	}
	l.done()
	if st := p.Stats(); st.Hits != 1 || st.Loads != 3 {
		t.Errorf("stats %+v after borrowing a loaded model, want 1 hit and no new load", st)
	}
}

// A retired model is released when its last batch ends, not before.
func TestModelPoolRetiresAfterLastBatch(t *testing.T) {
	ctx := context.Background()
	p := poolFor(t.Name(), 0)
	spec := stub.Tag(stub.Echo(2), t.Name())
	l, err := p.borrow(ctx, spec, 8)
	if err != nil {
		t.Fatal(err)
	}
	m := l.handle().Model().(*stub.Model)
	p.retire(spec)
	if st := inference.Shared().StatsFor(spec); st.Releases != 0 {
		t.Fatalf("retired with a batch in flight: released %d times", st.Releases)
	}
	l.done()
	if st := inference.Shared().StatsFor(spec); st.Releases != 1 || st.Refs != 0 {
		t.Errorf("after the last batch: %+v, want 1 release and no references", st)
	}
	_ = m
}

// WithModelUpdates with MaxModelsPerWorker: a retired model leaves room at
// once, and a shard that still borrows it (it has not taken the update
// yet) takes it from the shared cache without a load: model_loads counts
// each model once.
func TestModelUpdatesWithMaxModelsPerWorker(t *testing.T) {
	ctx := context.Background()
	p := poolFor(t.Name(), 1)
	v1, v2 := stub.Tag(stub.Echo(2), t.Name()+"v1"), stub.Tag(stub.Echo(2), t.Name()+"v2")
	l, err := p.borrow(ctx, v1, 8)
	if err != nil {
		t.Fatal(err)
	}
	l.done()
	p.retire(v1) // a shard took the update to v2
	l, err = p.borrow(ctx, v2, 8)
	if err != nil {
		t.Fatal(err)
	}
	l.done()
	l, err = p.borrow(ctx, v1, 8) // another shard's last batch on v1
	if err != nil {
		t.Fatal(err)
	}
	l.done()
	if st := p.Stats(); st.Loads != 2 || st.Loaded > 1 {
		t.Errorf("stats %+v: want 2 loads, one per model, and at most 1 loaded", st)
	}
	if st := inference.Shared().StatsFor(v1); st.Loads != 1 {
		t.Errorf("v1 loaded %d times, want once", st.Loads)
	}
}
