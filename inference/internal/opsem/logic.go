package opsem

// IsInfDetect returns which infinities IsInf reports: attributes
// detect_negative and detect_positive, both on by default.
func IsInfDetect(n Node) (negative, positive bool) {
	return n.Int("detect_negative", 1) != 0, n.Int("detect_positive", 1) != 0
}
