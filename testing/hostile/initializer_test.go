package hostile_test

import (
	"context"
	"slices"
	"testing"

	"github.com/beamml/beamml/inference"
)

// TestInitializerAsInput: from IR version 4 an initializer with the name
// of a graph input is that input's default value. A run that leaves the
// input out uses the initializer; a run that feeds it uses the feed.
func TestInitializerAsInput(t *testing.T) {
	isolate(t, "default_and_fed", func(t *testing.T) {
		m := single(op("add", "Add", names("x", "w")), f32, vals(info("x", f32, 2), info("w", f32, 2)),
			floatInit("w", dims(2), 1, 2))
		path := write(t, m)
		zero := tensor([]int{2}, []float32{0, 0})
		outs, err := bounded(t, std, func(ctx context.Context) ([2]inference.Tensor, error) {
			model, release, err := load(ctx, path)
			if err != nil {
				return [2]inference.Tensor{}, err
			}
			defer release()
			byDefault, err := model.Run(ctx, feeds{"x": zero})
			if err != nil {
				return [2]inference.Tensor{}, err
			}
			fed, err := model.Run(ctx, feeds{"x": zero, "w": tensor([]int{2}, []float32{10, 20})})
			return [2]inference.Tensor{byDefault["y"], fed["y"]}, err
		})
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range [][]float32{{1, 2}, {10, 20}} {
			got, err := inference.Data[float32](outs[i])
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("run %d (%s): y = %v (%v), want %v", i, []string{"w left out", "w fed"}[i], got, err, want)
			}
		}
	})
}
