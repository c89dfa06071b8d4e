// Package intern gives the decoders of beamml's element types one string
// for each short text they read again and again (tensor names, a model's
// URI and instance id): a pipeline's elements repeat a handful of them, and
// a new string per element per field is an allocation for nothing.
package intern

import "sync"

// The cache is bounded, and holds only short strings: decoders read
// untrusted bytes, which must not grow it without end.
const (
	maxStrings = 4096
	maxLen     = 128
)

var cache = struct {
	sync.RWMutex
	m map[string]string
}{m: map[string]string{}}

// String returns b as a string: the same string as an earlier call with
// the same bytes gave, while the cache holds it (short strings, the first
// 4096 seen), else a new one.
func String(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > maxLen {
		return string(b)
	}
	cache.RLock()
	s, ok := cache.m[string(b)] // a lookup by string(b) does not allocate
	cache.RUnlock()
	if ok {
		return s
	}
	s = string(b)
	cache.Lock()
	if len(cache.m) < maxStrings {
		cache.m[s] = s
	}
	cache.Unlock()
	return s
}
