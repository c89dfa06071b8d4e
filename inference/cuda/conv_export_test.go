package cuda

// SetColLimit sets the bound on im2col and col2im scratch matrices, in
// floats, and returns the function that restores it.
func SetColLimit(floats int64) (restore func()) {
	old := colLimit
	colLimit = floats
	return func() { colLimit = old }
}
