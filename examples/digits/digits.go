// Package digits reads the handwritten-digit records the examples classify
// (examples/classify/testdata/digits.csv, scikit-learn's 8×8 digits):
// "id,p0..p63,label,torch_prediction,logit0..logit9". It is for the
// examples and the end-to-end test, and for a reader who copies an example:
// a pipeline of one's own reads its own records.
package digits

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/beamml/beamml/inference"
)

// Pixels is the number of pixels of a record (an 8×8 image).
const Pixels = 64

// ErrSkip marks the header line and blank lines.
var ErrSkip = errors.New("digits: not a record")

// Parse splits a record into its id, the model's example {pixels: [64]},
// and the fields after the pixels. The header and blank lines fail with
// ErrSkip; a malformed record fails with an error naming the record and
// the field.
func Parse(line string) (id string, ex inference.Example, rest []string, err error) {
	f := strings.Split(strings.TrimSpace(line), ",")
	if f[0] == "" || f[0] == "id" {
		return "", nil, nil, ErrSkip
	}
	if len(f) < 1+Pixels {
		return "", nil, nil, fmt.Errorf("record %.20q: %d fields, want at least %d", f[0], len(f), 1+Pixels)
	}
	x := make([]float32, Pixels)
	for i := range x {
		v, err := strconv.ParseFloat(f[i+1], 32)
		if err != nil {
			return "", nil, nil, fmt.Errorf("record %s: pixel %d: %v", f[0], i, err)
		}
		x[i] = float32(v)
	}
	t, err := inference.New([]int{Pixels}, x)
	if err != nil {
		return "", nil, nil, fmt.Errorf("record %s: %v", f[0], err)
	}
	return f[0], inference.Example{"pixels": t}, f[1+Pixels:], nil
}
