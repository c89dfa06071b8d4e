package cuda

// Block-per-row launches, shared by the normalisations (lower_norm.go:
// norm.cu's norm_rows_f32 and norm_lp_f32) and the softmaxes
// (lower_softmax.go: softmax_f32).

// launchRows queues a kernel that runs a block per row: a grid of up to
// maxGrid blocks of threadsPerBlock (= BLOCK) threads, looping over the rest.
func launchRows(l *lowering, kernel string, rows int64, args ...kernelArg) error {
	if rows <= 0 {
		return nil
	}
	return l.LaunchGrid(kernel, Dim3{X: uint32(min(rows, maxGrid))}, Dim3{X: threadsPerBlock}, args...)
}
