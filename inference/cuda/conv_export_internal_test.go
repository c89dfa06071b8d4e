package cuda

// SetColLimit sets the bound on im2col and col2im scratch matrices, in
// floats, and returns the function that restores it.
func SetColLimit(floats int64) (restore func()) {
	old := colLimit
	colLimit = floats
	return func() { colLimit = old }
}

// SetGraphsOff turns CUDA graphs off (BEAMML_CUDA_GRAPHS=0) or on, and
// returns the function that restores the setting.
func SetGraphsOff(off bool) (restore func()) {
	old := graphsOff
	graphsOff = off
	return func() { graphsOff = old }
}

// SetIm2col32 lets im2col use 32-bit index arithmetic (on) or not, and
// returns the function that restores the setting.
func SetIm2col32(on bool) (restore func()) {
	old := im2col32
	im2col32 = on
	return func() { im2col32 = old }
}

// SetDeferEpilogues lets products hand pointwise epilogues to their
// output's reader (on) or not, and returns the function that restores
// the setting.
func SetDeferEpilogues(on bool) (restore func()) {
	old := deferEpilogues
	deferEpilogues = on
	return func() { deferEpilogues = old }
}

// SetTakeEpilogues lets readers take the pointwise epilogues products
// offer (on) or not, and returns the function that restores the setting.
func SetTakeEpilogues(on bool) (restore func()) {
	old := takeEpilogues
	takeEpilogues = on
	return func() { takeEpilogues = old }
}
