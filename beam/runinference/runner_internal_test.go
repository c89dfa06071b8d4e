package runinference

import (
	"bytes"
	"context"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/beamml/beamml/inference"
)

// goroutineModel is hostileModel that notes the goroutine each Run runs on.
type goroutineModel struct {
	hostileModel
	mu  sync.Mutex
	ids []int
}

func (m *goroutineModel) Run(ctx context.Context, in map[string]inference.Tensor) (map[string]inference.Tensor, error) {
	m.mu.Lock()
	m.ids = append(m.ids, goroutineID())
	m.mu.Unlock()
	return m.hostileModel.Run(ctx, in)
}

// goroutineID reads the calling goroutine's number from its stack trace.
func goroutineID() int {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	buf, _ = bytes.CutPrefix(buf, []byte("goroutine "))
	id, _ := strconv.Atoi(string(buf[:bytes.IndexByte(buf, ' ')]))
	return id
}

var runnerModel = &goroutineModel{}

func init() {
	inference.RegisterLoader("goroutines", func(context.Context, inference.Spec, inference.Backend) (inference.Model, error) {
		return runnerModel, nil
	})
}

// Every batch of a batcher runs on one goroutine, not the bundle's and not
// a new one per batch; a model that ends that goroutine (runtime.Goexit)
// fails its batch, and the next batch gets a new runner.
func TestRunnerServesEveryBatch(t *testing.T) {
	spec := inference.Spec{URI: "goroutines://" + t.Name(), Format: "goroutines"}
	fn := &inferFn{batcher{Spec: spec, Config: config{MinBatchSize: 1, MaxBatchSize: 1}, Failures: true}}
	r, results, failures := collector(fn)
	ctx := context.Background()
	if err := fn.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	defer fn.Teardown()
	var exs []inference.Example
	for i := range 12 {
		x0 := float32(i)
		if i == 5 {
			x0 = goexit
		}
		exs = append(exs, example(x0, 1))
	}
	if err := r.bundle(ctx, exs); err != nil {
		t.Fatal(err)
	}
	if len(*results) != 11 || len(*failures) != 1 {
		t.Fatalf("%d results and %d failures, want 11 and 1", len(*results), len(*failures))
	}
	ids, bundle := runnerModel.ids, goroutineID()
	if len(ids) != 12 {
		t.Fatalf("Run called %d times, want 12 (a batch of one per element)", len(ids))
	}
	for i, id := range ids {
		want := ids[0] // the first runner, until the Goexit of batch 5 ends it
		if i > 5 {
			want = ids[6]
		}
		if id != want || id == bundle {
			t.Errorf("batch %d ran on goroutine %d, want %d (the bundle's is %d): runs on %v", i, id, want, bundle, ids)
		}
	}
	if ids[6] == ids[0] {
		t.Errorf("batches after the Goexit ran on goroutine %d, which had ended", ids[6])
	}
}
