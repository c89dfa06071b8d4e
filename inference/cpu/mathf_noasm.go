//go:build !amd64 || noasm

package cpu

// The vector loops are amd64 assembly (mathf_amd64.s); other
// architectures, and builds tagged noasm, use the float32 functions
// element by element, whatever level is asked for.

const vecBest = vecGo

func expSumOn(_ vecLevel, y, x []float32, shift float32) float32 { return expSumGo(y, x, shift) }

func sigmoidsOn(_ vecLevel, y, x []float32, gate bool) { sigmoidsGo(y, x, gate) }

func erfsOn(_ vecLevel, y, x []float32) { erfsGo(y, x) }

func tanhsOn(_ vecLevel, y, x []float32) { tanhsGo(y, x) }

func clampsOn(_ vecLevel, y []float32, lo, hi float32) { clampsGo(y, lo, hi) }

func sumFloatsOn(_ vecLevel, x []float32) float32 { return sumFloatsGo(x) }

func maxFloatsOn(_ vecLevel, x []float32) float32 { return maxFloatsGo(x) }
