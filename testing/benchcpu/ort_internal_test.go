package main

import (
	"slices"
	"strings"
	"testing"
)

func TestParseVersion(t *testing.T) {
	if v, err := parseVersion([]byte(`{"ort_version":"1.30.0"}`)); err != nil || v != "1.30.0" {
		t.Errorf("parseVersion = %q, %v", v, err)
	}
	for _, bad := range []string{"", `{"model":"mlp"}`, `{"ort_version":""}`, "1.30.0"} {
		if _, err := parseVersion([]byte(bad)); err == nil || !strings.Contains(err.Error(), "want {\"ort_version\"") {
			t.Errorf("parseVersion(%q) = %v, want an error", bad, err)
		}
	}
}

func TestParseCell(t *testing.T) {
	key := cellKey{"mlp", 8, 2}
	c, err := parseCell([]byte(`{"model":"mlp","batch":8,"threads":2,"ms":0.5,"runs":100,"outputs":[`+
		`{"name":"label","type":"int64","shape":[8],"file":"out/mlp-b8-0.i64"},{"name":"seq","type":"string","shape":[8]}]}`), key)
	if err != nil {
		t.Fatal(err)
	}
	want := []ortOutput{{"label", "int64", []int{8}, "out/mlp-b8-0.i64"}, {"seq", "string", []int{8}, ""}}
	if c.Ms != 0.5 || c.Runs != 100 || !slices.EqualFunc(c.Outputs, want, func(a, b ortOutput) bool {
		return a.Name == b.Name && a.Type == b.Type && slices.Equal(a.Shape, b.Shape) && a.File == b.File
	}) {
		t.Errorf("parseCell = %+v", c)
	}
	if c, err := parseCell([]byte(`{"model":"mlp","batch":8,"threads":2,"error":"bad model"}`), key); err != nil || c.Error != "bad model" {
		t.Errorf("parseCell of an error = %+v, %v", c, err)
	}
	for _, tc := range []struct{ in, want string }{
		{"not json", "invalid character"},
		{`{"model":"mlp","batch":1,"threads":2,"ms":1}`, "answered for {mlp 1 2}, asked for {mlp 8 2}"},
		{`{"model":"mlp","batch":8,"threads":2}`, "no time and no error"},
	} {
		if _, err := parseCell([]byte(tc.in), key); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseCell(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}
