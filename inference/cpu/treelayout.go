package cpu

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// A tree ensemble compiled for prediction (ops_mltree.go runs it). Each
// tree is laid out in one of three ways, chosen when the model is
// compiled:
//
//   - perfect: a tree of depth D ≤ teMaxPerfectDepth whose padding to a
//     full binary tree costs little is stored breadth-first as the 2^D − 1
//     nodes of a full tree, each {threshold, column}, with no child links:
//     node i's children are 2i+1 and 2i+2, and a row takes exactly D steps,
//     without a branch on the data, to one of 2^D slots that name its leaf.
//     A leaf above depth D is padded with nodes whose two subtrees end in
//     that same leaf, so their test does not matter.
//   - pointer: any other tree whose nodes compare with ≤, <, ≥ or >, its
//     nodes {threshold, column, first, second} in depth-first order, a
//     negative child being a leaf.
//   - general: a tree with an EQ, NEQ or MEMBER node, walked node by node
//     with opsem.TreeNode.TakesTrue.
//
// The first two test every node the same way, u ≤ c → first, else (NaN
// included) second, where u is the row's feature or its negation
// (opsem.ThresholdTest rewrites <, ≥, > and the NaN direction so), on a tile of rows gathered
// once into compact columns of the compare type T: one per (feature,
// negated) the ensemble reads, each column's tileRows values together
// (column-major), so that a node's column is one byte offset for all the
// rows of the tile: row i's value is at off + i·size(T).

// teMaxPerfectDepth bounds the perfect layout: 4096 slots.
const teMaxPerfectDepth = 12

// teTileBytes is about what a tile's gathered rows take in float32: a
// tile stays in the level-1 cache while the trees of a block walk it.
const teTileBytes = 16 << 10

// Tree layouts.
const (
	tePerfect uint8 = iota
	tePointer
	teGeneral
)

// teTree is one tree of a compiled ensemble.
type teTree struct {
	kind  uint8
	depth int32 // perfect: D
	// perfect: its nodes are perf[at : at+2^D−1] and its slots
	// slots[slot : slot+2^D]; pointer: its root is ptr[at] (or the leaf
	// ^at); general: its root is gen[at] (or the leaf ^at).
	at, slot int32
}

// teNode is a pointer tree's node: a row whose column (at byte off of the
// tile, plus the row's) is ≤ thr goes to first, else to second; a child
// < 0 is the leaf ^child.
type teNode[T teReal] struct {
	thr           T
	off           int32
	first, second int32
}

// tePerfectNode is a perfect tree's node: a row whose column (at byte off
// of the tile, plus the row's) is ≤ thr goes to the left child, else to
// the right.
type tePerfectNode[T teReal] struct {
	thr T
	off int32
}

// teLayout holds what the fast paths read in compare type T.
type teLayout[T teReal] struct {
	ptr  []teNode[T]
	perf []tePerfectNode[T]
}

// teReal are the types an ensemble compares in.
type teReal interface{ float32 | float64 }

// teModel is a tree ensemble compiled once per model (the node's
// preparer) and read by every run.
type teModel struct {
	e     *opsem.TreeEnsemble
	trees []teTree
	// The compact columns: a tile holds pos, then neg (negated), each a
	// feature, each tileRows rows (a multiple of 8).
	pos, neg []int32
	tileRows int
	slots    []int32 // perfect trees' leaves
	// slotTarget and slotValue are each slot's leaf's leafTarget and
	// leafValue, when fast.
	slotTarget []int32
	slotValue  []float64
	// treeBlocks bounds the blocks of trees a row block walks in turn:
	// block b is trees[treeBlocks[b]:treeBlocks[b+1]].
	treeBlocks []int
	gen        []opsem.TreeNode // general trees' nodes: Feature is a column, children renumbered
	// ptrSrc and perfSrc name the ensemble node of each ptr and perf node
	// (−1: padding), to lay the thresholds out in another compare type.
	ptrSrc, perfSrc []int32
	// The leaves: leaf l's weights are [leafStart[l], leafStart[l+1]) of
	// leafTarget and leafWeight. When fast, a leaf adds leafValue[l] to
	// target leafTarget[l]: its one weight, or the sum of its weights
	// for an ensemble of one target.
	leafStart  []int32
	leafTarget []int32
	leafWeight []float64
	leafValue  []float64
	fast       bool // SUM or AVERAGE, and one target or one weight a leaf
	// track: which targets a row's leaves reach matters (MIN, MAX, and
	// classifiers whose classes some rows reach and others do not), and
	// is kept per row; for the other classifiers it is reached, the same
	// for every row.
	track    bool
	reached  []bool
	depthSum int // the trees' depths: a row's work

	l32   *teLayout[float32]
	l64   *teLayout[float64]
	once  sync.Once // lays out the compare type not laid out at compile
	bytes atomic.Int64
}

// teReached returns, for a classifier whose rows all reach the same
// classes, which classes those are: a class some tree gives a weight at
// every leaf, or that no leaf gives one. It is nil when some rows may
// reach a class that others do not.
func teReached(e *opsem.TreeEnsemble) []bool {
	always, some := make([]bool, e.Targets), make([]bool, e.Targets)
	count := make([]int32, e.Targets) // the tree's leaves that give the class a weight
	visit := make([]int32, e.Targets) // the leaf visit that last counted the class
	seen := make([]int32, len(e.LeafStart)-1)
	var touched []int32
	var stack []opsem.TreeChild
	visits := int32(0)
	for t, root := range e.Roots {
		leaves := int32(0)
		touched = touched[:0]
		stack = append(stack[:0], root)
		for len(stack) > 0 {
			c := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if !c.IsLeaf() {
				stack = append(stack, e.Nodes[c].True, e.Nodes[c].False)
				continue
			}
			if l := c.Leaf(); seen[l] != int32(t+1) {
				seen[l] = int32(t + 1)
				leaves++
				visits++
				for _, w := range e.Weights[e.LeafStart[l]:e.LeafStart[l+1]] {
					if visit[w.Target] != visits {
						visit[w.Target] = visits
						if count[w.Target] == 0 {
							touched = append(touched, w.Target)
						}
						count[w.Target]++
						some[w.Target] = true
					}
				}
			}
		}
		for _, k := range touched {
			always[k] = always[k] || count[k] == leaves
			count[k] = 0
		}
	}
	for k := range always {
		if some[k] && !always[k] {
			return nil
		}
	}
	return always
}

// teChooseLayout is the layout of a tree of the given depth and number of
// interior nodes, general when one of them tests with EQ, NEQ or MEMBER:
// perfect when padding it to the full tree takes at most four times its
// nodes (and 32 more).
func teChooseLayout(depth, nodes int, general bool) uint8 {
	switch {
	case general:
		return teGeneral
	case depth <= teMaxPerfectDepth && 1<<depth-1 <= 4*nodes+32:
		return tePerfect
	}
	return tePointer
}

// teCompile lays out e for prediction, each tree as choose says (tests
// choose other layouts than teChooseLayout; general is the only one for a
// tree with EQ, NEQ or MEMBER).
func teCompile(e *opsem.TreeEnsemble, choose func(depth, nodes int, general bool) uint8) (*teModel, error) {
	m := &teModel{e: e, track: e.Aggregate == opsem.AggregateMin || e.Aggregate == opsem.AggregateMax}
	leaves := len(e.LeafStart) - 1
	m.leafStart = e.LeafStart
	m.leafTarget = make([]int32, len(e.Weights))
	m.leafWeight = make([]float64, len(e.Weights))
	for j, w := range e.Weights {
		m.leafTarget[j], m.leafWeight[j] = w.Target, w.Value
	}
	if e.Classifier != nil {
		m.reached = teReached(e)
		m.track = m.reached == nil
	}
	oneWeight := len(e.Weights) == leaves
	for l := 0; oneWeight && l < leaves; l++ {
		oneWeight = e.LeafStart[l+1] == int32(l+1)
	}
	if m.fast = !m.track && (e.Targets == 1 || oneWeight); m.fast {
		if !oneWeight { // one target: the sum of a leaf's weights
			m.leafTarget, m.leafValue = make([]int32, leaves), make([]float64, leaves)
			for l := range leaves {
				for j := e.LeafStart[l]; j < e.LeafStart[l+1]; j++ {
					m.leafValue[l] += m.leafWeight[j]
				}
			}
		} else {
			m.leafValue = m.leafWeight
		}
	}
	// Each tree's layout, from the nodes it reaches (each once: the
	// ensemble's nodes form trees).
	var stack []opsem.TreeChild
	walk := func(root opsem.TreeChild, visit func(int32)) {
		stack = append(stack[:0], root)
		for len(stack) > 0 {
			c := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if c.IsLeaf() {
				continue
			}
			visit(int32(c))
			stack = append(stack, e.Nodes[c].False, e.Nodes[c].True) // the true branch next
		}
	}
	m.trees = make([]teTree, len(e.Roots))
	counts := make([]int, len(e.Roots))
	columns := map[int64]bool{} // feature·2 + negated
	for t, root := range e.Roots {
		count, general := 0, false
		walk(root, func(i int32) {
			count++
			counts[t]++
			mode := e.Nodes[i].Mode
			general = general || mode == opsem.BranchEQ || mode == opsem.BranchNEQ || mode == opsem.BranchMember
		})
		depth := e.Depths[t]
		m.depthSum += depth
		tr := &m.trees[t]
		switch tr.kind = choose(depth, count, general); {
		case general:
			tr.kind = teGeneral
		case tr.kind == tePerfect && depth > teMaxPerfectDepth:
			tr.kind = tePointer
		case tr.kind == tePerfect:
			tr.depth = int32(depth)
		}
		walk(root, func(i int32) {
			neg := false
			if tr.kind != teGeneral {
				neg, _, _ = opsem.ThresholdTest[float64](&e.Nodes[i])
			}
			columns[int64(e.Nodes[i].Feature)*2+b2i64(neg)] = true
		})
	}
	keys := slices.Sorted(maps.Keys(columns))
	colOf := make(map[int64]int32, len(keys))
	for _, negated := range []int64{0, 1} {
		for _, k := range keys {
			if k&1 == negated {
				colOf[k] = int32(len(m.pos) + len(m.neg))
				if negated == 0 {
					m.pos = append(m.pos, int32(k>>1))
				} else {
					m.neg = append(m.neg, int32(k>>1))
				}
			}
		}
	}
	column := func(i int32, neg bool) int32 { return colOf[int64(e.Nodes[i].Feature)*2+b2i64(neg)] }
	width := len(m.pos) + len(m.neg)
	m.tileRows = min(256, max(8, teTileBytes/max(1, 4*width))) &^ 7
	if width*m.tileRows*8 > math.MaxInt32 {
		return nil, fmt.Errorf("the trees read %d features: %w", width, inference.ErrBadModel)
	}

	// The structure, with float64 thresholds and a column's index for off
	// (relayout lays it out in T).
	var l64 teLayout[float64]
	renumber := make([]int32, len(e.Nodes))
	number := func(root opsem.TreeChild, base int, add func(int32)) {
		next := int32(base)
		walk(root, func(i int32) {
			renumber[i] = next
			next++
			add(i)
		})
	}
	for t, root := range e.Roots {
		tr := &m.trees[t]
		tr.at = int32(root) // a tree that is a leaf
		switch tr.kind {
		case tePerfect:
			tr.at, tr.slot = int32(len(l64.perf)), int32(len(m.slots))
			level := []opsem.TreeChild{root}
			for range tr.depth {
				next := make([]opsem.TreeChild, 0, 2*len(level))
				for _, c := range level {
					if c.IsLeaf() {
						l64.perf = append(l64.perf, tePerfectNode[float64]{})
						m.perfSrc = append(m.perfSrc, -1)
						next = append(next, c, c)
						continue
					}
					nd := &e.Nodes[c]
					neg, thr, firstTrue := opsem.ThresholdTest[float64](nd)
					l64.perf = append(l64.perf, tePerfectNode[float64]{thr: thr, off: column(int32(c), neg)})
					m.perfSrc = append(m.perfSrc, int32(c))
					if firstTrue {
						next = append(next, nd.True, nd.False)
					} else {
						next = append(next, nd.False, nd.True)
					}
				}
				level = next
			}
			for _, c := range level {
				m.slots = append(m.slots, int32(c.Leaf()))
			}
		case tePointer:
			base := len(l64.ptr)
			number(root, base, func(i int32) {
				neg, thr, _ := opsem.ThresholdTest[float64](&e.Nodes[i])
				l64.ptr = append(l64.ptr, teNode[float64]{thr: thr, off: column(i, neg)})
				m.ptrSrc = append(m.ptrSrc, i)
			})
			for k := base; k < len(l64.ptr); k++ {
				nd := &e.Nodes[m.ptrSrc[k]]
				_, _, firstTrue := opsem.ThresholdTest[float64](nd)
				first, second := nd.True, nd.False
				if !firstTrue {
					first, second = second, first
				}
				l64.ptr[k].first, l64.ptr[k].second = teLink(first, renumber), teLink(second, renumber)
			}
			if !root.IsLeaf() {
				tr.at = int32(base)
			}
		case teGeneral:
			base := len(m.gen)
			number(root, base, func(i int32) {
				nd := e.Nodes[i]
				nd.Feature = column(i, false)
				m.gen = append(m.gen, nd)
			})
			for k := base; k < len(m.gen); k++ {
				nd := &m.gen[k]
				nd.True, nd.False = opsem.TreeChild(teLink(nd.True, renumber)), opsem.TreeChild(teLink(nd.False, renumber))
			}
			if !root.IsLeaf() {
				tr.at = int32(base)
			}
		}
	}
	if m.fast {
		m.slotTarget, m.slotValue = make([]int32, len(m.slots)), make([]float64, len(m.slots))
		for s, l := range m.slots {
			m.slotTarget[s], m.slotValue[s] = m.leafTarget[l], m.leafValue[l]
		}
	}
	m.treeBlocks = []int{0}
	bytes := 0
	for t, tr := range m.trees {
		switch tr.kind { // in float32, with a weight a leaf
		case tePerfect:
			bytes += (1<<tr.depth-1)*8 + 1<<tr.depth*8
		case tePointer:
			bytes += counts[t] * (16 + 8)
		default:
			bytes += counts[t] * (int(unsafe.Sizeof(opsem.TreeNode{})) + 8)
		}
		if bytes >= teTreeBlockBytes {
			m.treeBlocks, bytes = append(m.treeBlocks, t+1), 0
		}
	}
	if last := m.treeBlocks[len(m.treeBlocks)-1]; last < len(m.trees) {
		m.treeBlocks = append(m.treeBlocks, len(m.trees))
	}
	if e.DoubleSplits {
		m.l64 = relayout[float64](m, &l64, 1)
	} else {
		m.l32 = relayout[float32](m, &l64, 1)
	}
	e.Weights = nil // in leafTarget and leafWeight now
	if e.DoubleSplits {
		e.Nodes = nil // laid out in float64, the only compare type
	}
	m.bytes.Store(m.size())
	return m, nil
}

// teLink is child c renumbered: a node's new number, or the leaf as it is.
func teLink(c opsem.TreeChild, renumber []int32) int32 {
	if c.IsLeaf() {
		return int32(c)
	}
	return renumber[c]
}

// relayout lays out m's fast trees in T, with the structure of from,
// whose off is a column times unit.
func relayout[T, F teReal](m *teModel, from *teLayout[F], unit int32) *teLayout[T] {
	l := &teLayout[T]{ptr: make([]teNode[T], len(from.ptr)), perf: make([]tePerfectNode[T], len(from.perf))}
	var t T
	off := func(o int32) int32 { return o / unit * int32(m.tileRows) * int32(unsafe.Sizeof(t)) }
	for k, nd := range from.ptr {
		_, thr, _ := opsem.ThresholdTest[T](&m.e.Nodes[m.ptrSrc[k]])
		l.ptr[k] = teNode[T]{thr: thr, off: off(nd.off), first: nd.first, second: nd.second}
	}
	for k, nd := range from.perf {
		l.perf[k].off = off(nd.off)
		if src := m.perfSrc[k]; src >= 0 {
			_, l.perf[k].thr, _ = opsem.ThresholdTest[T](&m.e.Nodes[src])
		}
	}
	return l
}

// layout64 returns the float64 layout, laying it out on first use (a
// float64 input of a model with float thresholds).
func (m *teModel) layout64() *teLayout[float64] {
	m.once.Do(func() {
		if m.l64 == nil {
			m.l64 = relayout[float64](m, m.l32, int32(m.tileRows)*4)
			m.bytes.Store(m.size())
		}
	})
	return m.l64
}

// size is the bytes m holds beyond the ensemble's attributes.
func (m *teModel) size() int64 {
	n := int64(len(m.trees))*int64(unsafe.Sizeof(teTree{})) +
		4*int64(len(m.pos)+len(m.neg)+len(m.slots)+len(m.slotTarget)+len(m.ptrSrc)+len(m.perfSrc)+len(m.leafStart)+len(m.leafTarget)) +
		8*int64(len(m.leafWeight)+len(m.leafValue)+len(m.slotValue)) + int64(len(m.reached)) +
		int64(len(m.gen))*int64(unsafe.Sizeof(opsem.TreeNode{})) +
		int64(len(m.e.Nodes))*int64(unsafe.Sizeof(opsem.TreeNode{})) + 8*int64(len(m.e.Members))
	if l := m.l32; l != nil {
		n += int64(len(l.ptr))*int64(unsafe.Sizeof(teNode[float32]{})) + int64(len(l.perf))*int64(unsafe.Sizeof(tePerfectNode[float32]{}))
	}
	if l := m.l64; l != nil {
		n += int64(len(l.ptr))*int64(unsafe.Sizeof(teNode[float64]{})) + int64(len(l.perf))*int64(unsafe.Sizeof(tePerfectNode[float64]{}))
	}
	return n
}

// preparedBytes is what Model.ByteSize counts for the ensemble.
func (m *teModel) preparedBytes() int64 { return m.bytes.Load() }

func b2i64(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// Traversals: each finds the leaf of rows rows of a block (row i's
// columns are xb[i·w : i·w+w]) in one tree, into leaves.

// tePerfectLeaves walks a perfect tree of depth depth, eight rows at a
// time, to the slots of rows rows of tile (tileRows rows; the rows past
// rows up to a multiple of 8 are walked too, on whatever values are
// there, and their slots written). It indexes by pointer arithmetic,
// without bounds checks: a perfect tree's nodes and slots are 2^depth − 1
// and 2^depth (teCompile), and a node's off is a column's of the tile.
func tePerfectLeaves[T teReal](nodes []tePerfectNode[T], depth int, tile []T, tileRows, rows int, slots []int32) {
	if depth == 0 {
		clear(slots[:rows])
		return
	}
	if rows == 0 || len(nodes) != 1<<depth-1 || len(slots) < tileRows || rows > tileRows || tileRows%8 != 0 || len(tile) == 0 || len(tile)%tileRows != 0 {
		panic("cpu: perfect tree walked out of its layout")
	}
	np := unsafe.Pointer(unsafe.SliceData(nodes))
	var nd tePerfectNode[T]
	shift := uintptr(3) // 8-byte nodes of float32, 16-byte ones of float64
	if unsafe.Sizeof(nd) == 16 {
		shift = 4
	}
	end := uintptr(len(nodes)) << shift
	x := unsafe.Pointer(unsafe.SliceData(tile))
	for i := 0; i < rows; i += 8 {
		k0, k1, k2, k3, k4, k5, k6, k7 := tePerfect8[T](np, end, unsafe.Add(x, uintptr(i)*unsafe.Sizeof(nd.thr)))
		s := slots[i : i+8]
		s[0], s[1], s[2], s[3] = int32((k0-end)>>shift), int32((k1-end)>>shift), int32((k2-end)>>shift), int32((k3-end)>>shift)
		s[4], s[5], s[6], s[7] = int32((k4-end)>>shift), int32((k5-end)>>shift), int32((k6-end)>>shift), int32((k7-end)>>shift)
	}
}

// tePerfect8 walks eight rows, whose values of a column are at x + off,
// x + off + size(T), …, down the perfect tree at np to their nodes (2^depth
// − 1 + their slots), in bytes: node i is at i·size(node), its children at
// 2i+1 and 2i+2, so a walk at byte k goes on to 2k + size(node), or one
// node further; it ends past end, the first slot's byte. A function of its
// own, so that its loop keeps the eight walks in registers; the sizes
// are constants in each instantiation.
//
//go:noinline
func tePerfect8[T teReal](np unsafe.Pointer, end uintptr, x unsafe.Pointer) (k0, k1, k2, k3, k4, k5, k6, k7 uintptr) {
	var nd tePerfectNode[T]
	ns, ts := unsafe.Sizeof(nd), unsafe.Sizeof(nd.thr)
	for k0 < end {
		n0 := (*tePerfectNode[T])(unsafe.Add(np, k0))
		n1 := (*tePerfectNode[T])(unsafe.Add(np, k1))
		n2 := (*tePerfectNode[T])(unsafe.Add(np, k2))
		n3 := (*tePerfectNode[T])(unsafe.Add(np, k3))
		n4 := (*tePerfectNode[T])(unsafe.Add(np, k4))
		n5 := (*tePerfectNode[T])(unsafe.Add(np, k5))
		n6 := (*tePerfectNode[T])(unsafe.Add(np, k6))
		n7 := (*tePerfectNode[T])(unsafe.Add(np, k7))
		k0 = 2*k0 + ns + b2u(!(*(*T)(unsafe.Add(x, uintptr(n0.off))) <= n0.thr))*ns
		k1 = 2*k1 + ns + b2u(!(*(*T)(unsafe.Add(x, uintptr(n1.off)+ts)) <= n1.thr))*ns
		k2 = 2*k2 + ns + b2u(!(*(*T)(unsafe.Add(x, uintptr(n2.off)+2*ts)) <= n2.thr))*ns
		k3 = 2*k3 + ns + b2u(!(*(*T)(unsafe.Add(x, uintptr(n3.off)+3*ts)) <= n3.thr))*ns
		k4 = 2*k4 + ns + b2u(!(*(*T)(unsafe.Add(x, uintptr(n4.off)+4*ts)) <= n4.thr))*ns
		k5 = 2*k5 + ns + b2u(!(*(*T)(unsafe.Add(x, uintptr(n5.off)+5*ts)) <= n5.thr))*ns
		k6 = 2*k6 + ns + b2u(!(*(*T)(unsafe.Add(x, uintptr(n6.off)+6*ts)) <= n6.thr))*ns
		k7 = 2*k7 + ns + b2u(!(*(*T)(unsafe.Add(x, uintptr(n7.off)+7*ts)) <= n7.thr))*ns
	}
	return
}

// tePointerLeaves walks a pointer tree from root for rows rows of tile.
// It indexes by pointer arithmetic, without bounds checks: every child is
// a node of the tree or a leaf (teCompile), and a node's off is a
// column's of the tile.
func tePointerLeaves[T teReal](nodes []teNode[T], root int32, tile []T, tileRows, rows int, leaves []int32) {
	if root < 0 {
		for i := range rows {
			leaves[i] = ^root
		}
		return
	}
	if rows == 0 || rows > tileRows || len(tile) == 0 || len(tile)%tileRows != 0 || int(root) >= len(nodes) {
		panic("cpu: pointer tree walked out of its layout")
	}
	_ = leaves[rows-1]
	np := unsafe.Pointer(unsafe.SliceData(nodes))
	var nd teNode[T]
	size := unsafe.Sizeof(nd)
	x := unsafe.Pointer(unsafe.SliceData(tile))
	for i := range rows {
		k := root
		for k >= 0 {
			n := (*teNode[T])(unsafe.Add(np, uintptr(k)*size))
			if *(*T)(unsafe.Add(x, n.off)) <= n.thr {
				k = n.first
			} else {
				k = n.second
			}
		}
		leaves[i] = ^k
		x = unsafe.Add(x, unsafe.Sizeof(nd.thr))
	}
}

// teGeneralLeaves walks a general tree from root (a node of nodes) for
// rows rows of tile.
func teGeneralLeaves[T teReal](nodes []opsem.TreeNode, members []float64, root int32, tile []T, tileRows, rows int, leaves []int32) {
	for i := range rows {
		k := opsem.TreeChild(root)
		for !k.IsLeaf() {
			nd := &nodes[k]
			if nd.TakesTrue(float64(tile[int(nd.Feature)*tileRows+i]), members) {
				k = nd.True
			} else {
				k = nd.False
			}
		}
		leaves[i] = int32(k.Leaf())
	}
}

func b2u(b bool) uintptr {
	if b {
		return 1
	}
	return 0
}
