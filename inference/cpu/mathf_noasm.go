//go:build !amd64 || noasm

package cpu

// The vector loops are amd64 assembly (mathf_amd64.s); other
// architectures, and builds tagged noasm, use the float32 functions
// element by element.

// expSum sets y[i] = e^(x[i] − shift) and returns the sum; y and x are as
// long, and may be the same slice.
func expSum(y, x []float32, shift float32) float32 {
	var sum float32
	for i, v := range x {
		y[i] = exp32(v - shift)
		sum += y[i]
	}
	return sum
}

// sigmoids sets y[i] = sigmoid(x[i]); y and x are as long, and may be the
// same slice.
func sigmoids(y, x []float32) {
	for i, v := range x {
		y[i] = sigmoid32(v)
	}
}

// erfs sets y[i] = erf(x[i]); y and x are as long, and may be the same
// slice.
func erfs(y, x []float32) {
	for i, v := range x {
		y[i] = erf32(v)
	}
}

// clamps sets y[i] = min(max(y[i], lo), hi); NaN stays NaN.
func clamps(y []float32, lo, hi float32) {
	for i, v := range y {
		if v < lo {
			y[i] = lo
		} else if v > hi {
			y[i] = hi
		}
	}
}

// silus sets y[i] = x[i]·sigmoid32(x[i]), rounded as Mul(x, Sigmoid(x))
// rounds; y and x are as long, and may be the same slice.
func silus(y, x []float32) {
	for i, v := range x {
		y[i] = v * sigmoid32(v)
	}
}

// tanhs sets y[i] = tanh(x[i]); y and x are as long, and may be the same
// slice.
func tanhs(y, x []float32) {
	for i, v := range x {
		y[i] = tanh32(v)
	}
}
