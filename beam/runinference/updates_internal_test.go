package runinference

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// WatchFilePattern's DoFn emits the newest match by modification time,
// once per change, and nothing while no file matches.
func TestWatchFileEmitsNewestOnChange(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	f := &watchFn{Pattern: filepath.Join(dir, "*.onnx")}
	var got []ModelMetadata
	tick := func() {
		t.Helper()
		if err := f.ProcessElement(ctx, nil, func(md ModelMetadata) { got = append(got, md) }); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name string, at time.Time) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("model"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		return p
	}
	now := time.Now()
	tick() // nothing matches yet
	b := write("b.onnx", now.Add(-time.Hour))
	tick()
	tick()               // unchanged: no repeat
	write("a.onnx", now) // newer, though it sorts first
	write("c.txt", now.Add(time.Hour))
	tick()
	want := []ModelMetadata{{ID: "b.onnx", URI: b}, {ID: "a.onnx", URI: filepath.Join(dir, "a.onnx")}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("emitted %v, want %v", got, want)
	}
}
