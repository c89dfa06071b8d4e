package check

import (
	"strings"
	"testing"

	"github.com/beamml/beamml/inference"
)

// A mismatch of an exactly compared tensor names its first differing
// element and both values: a GPU's failure log is all there is to go on.
func TestCompareNamesTheFirstDifference(t *testing.T) {
	want, _ := inference.New([]int{4}, []int32{1, 2, 3, -2147483648})
	got, _ := inference.New([]int{4}, []int32{1, 2, 3, 2147483647})
	err := Compare(got, want, 0, 0)
	if err == nil || !strings.Contains(err.Error(), "element 3: got 2147483647, want -2147483648") {
		t.Fatalf("Compare = %v, want it to name element 3 and both values", err)
	}
	if err := Compare(want, want, 0, 0); err != nil {
		t.Errorf("Compare of a tensor with itself: %v", err)
	}
	b, _ := inference.New([]int{2}, []bool{true, false})
	c, _ := inference.New([]int{2}, []bool{true, true})
	if err := Compare(c, b, 0, 0); err == nil || !strings.Contains(err.Error(), "element 1: got true, want false") {
		t.Errorf("Compare of bools = %v, want it to name element 1", err)
	}
}
