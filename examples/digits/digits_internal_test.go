package digits

import (
	"errors"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference"
)

func TestParse(t *testing.T) {
	px := strings.Repeat("1,", Pixels)
	id, ex, rest, err := Parse("7," + px + "3,3")
	if err != nil || id != "7" || strings.Join(rest, ",") != "3,3" {
		t.Fatalf("Parse = %q %v %q %v", id, ex, rest, err)
	}
	if d, _ := inference.Data[float32](ex["pixels"]); len(d) != Pixels || d[0] != 1 {
		t.Errorf("pixels %v", d)
	}
	for _, line := range []string{"id,p0", "", "  "} {
		if _, _, _, err := Parse(line); !errors.Is(err, ErrSkip) {
			t.Errorf("Parse(%q) = %v, want ErrSkip", line, err)
		}
	}
	for line, want := range map[string]string{"7,1,2": "3 fields", "7," + strings.Repeat("x,", Pixels): "pixel 0"} {
		if _, _, _, err := Parse(line); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%.20q) = %v, want an error with %q", line, err, want)
		}
	}
}
