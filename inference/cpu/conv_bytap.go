package cpu

import (
	"github.com/beamml/beamml/inference/internal/opsem"
)

// A 2-D convolution at stride 1 whose taps read mostly padding (a
// dilation as wide as the image: DeepLab's atrous pyramid at rate 12 on a
// 14×14 map, where each tap but the centre reads the image for 2 of 14
// output rows or columns) runs as one product per tap, each over the
// rectangle of outputs for which that tap reads the image: W's column for
// the tap (M × C) times the image's rectangle the tap reads (C × its
// outputs), added into the output. The whole product's work on the
// padding, which cvLiveTaps drops only for taps that read none of the
// image, is left out: at rate 12 on 14×14, 324 output columns' worth of
// products instead of 9·196 = 1,764. Where the taps that read the image
// read it for most outputs, the whole product (without the others) does
// less copying.

// cvByTapShare is the largest share of the product's columns (taps that
// read the image × outputs) that their rectangles may cover for cvByTap to
// be used.
const cvByTapShare = 0.5

// cvByTap is a convolution's products per tap, made once per plan.
type cvByTap struct {
	cg, mg, group  int
	ih, iw, oh, ow int
	regions        []cvTapRegion
	maxArea        int // the largest rectangle's outputs
}

// cvTapRegion is one tap's product: the outputs [y0, y1)×[x0, x1) that
// read the image through it, output (y0, x0) reading image element (iy,
// ix); W's column for the tap, [group][mg][cg], and its packing per group.
type cvTapRegion struct {
	y0, y1, x0, x1 int
	iy, ix         int
	tap            int // ky·kw + kx
	w              []float32
	packs          nnPackedSet
}

func (r *cvTapRegion) area() int { return (r.y1 - r.y0) * (r.x1 - r.x0) }

// newCvByTap returns the per-tap products of a 2-D convolution at stride 1
// with W a constant (wd, [outChans][cg][kh][kw]), or nil where its taps'
// rectangles cover more than cvByTapShare of the whole product.
func newCvByTap(g opsem.Window, cg, outChans, group int, wd []float32) *cvByTap {
	if len(g.Kernel) != 2 || g.Stride[0] != 1 || g.Stride[1] != 1 || wd == nil {
		return nil
	}
	b := &cvByTap{cg: cg, mg: outChans / group, group: group, ih: g.In[0], iw: g.In[1], oh: g.Out[0], ow: g.Out[1]}
	kh, kw := g.Kernel[0], g.Kernel[1]
	covered := 0
	for ky := range kh {
		offY := ky*g.Dilation[0] - g.PadBegin[0]
		y0, y1 := cvSpan(offY, 1, b.ih, b.oh)
		for kx := range kw {
			offX := kx*g.Dilation[1] - g.PadBegin[1]
			x0, x1 := cvSpan(offX, 1, b.iw, b.ow)
			if y0 >= y1 || x0 >= x1 {
				continue // reads only padding
			}
			r := cvTapRegion{y0: y0, y1: y1, x0: x0, x1: x1, iy: y0 + offY, ix: x0 + offX, tap: ky*kw + kx}
			covered += r.area()
			b.maxArea = max(b.maxArea, r.area())
			b.regions = append(b.regions, r)
		}
	}
	// Against the product of the taps that read any of the image (the
	// others are left out anyway: cvLiveTaps).
	if float64(covered) > cvByTapShare*float64(len(b.regions)*b.oh*b.ow) {
		return nil
	}
	for i := range b.regions {
		// W's column for the tap, gathered as [outChans][cg], and packed.
		r, taps := &b.regions[i], kh*kw
		r.w = make([]float32, outChans*cg)
		for m := range outChans {
			for c := range cg {
				r.w[m*cg+c] = wd[(m*cg+c)*taps+r.tap]
			}
		}
		r.packs = make(nnPackedSet, group)
		for grp := range group {
			r.packs[grp] = nnPackWholeA(nnBestKernel, false, b.mg, cg, r.w[grp*b.mg*cg:], cg)
		}
	}
	return b
}

// scratch is the floats a unit's products take: the rectangle's image
// (cg × maxArea) and its outputs (mg × maxArea).
func (b *cvByTap) scratch() int { return (b.cg + b.mg) * b.maxArea }

// run computes one unit's convolution, src (the group's channels of one
// image) into y (the group's output channels, whatever they held), plus
// bias (nil for none), through tail (nil for none), on threads.
func (b *cvByTap) run(grp int, src, bias, y []float32, tail nnTail, threads int) {
	osp, isp := b.oh*b.ow, b.ih*b.iw
	if bias != nil {
		cvFillPlanes(y, bias, osp)
	} else {
		clear(y)
	}
	buf := cvScratchBuf(b.scratch())
	defer cvScratchPool.put(buf)
	for i := range b.regions {
		r := &b.regions[i]
		rows, cols := r.y1-r.y0, r.x1-r.x0
		area := rows * cols
		img, prod := (*buf)[:b.cg*area], (*buf)[b.cg*area:(b.cg+b.mg)*area]
		for c := range b.cg {
			for oy := range rows {
				at := c*isp + (r.iy+oy)*b.iw + r.ix
				copy(img[c*area+oy*cols:c*area+(oy+1)*cols], src[at:at+cols])
			}
		}
		w := r.w[grp*b.mg*b.cg:]
		pre := nnPrepacked{a: r.packs.of(grp, w)}
		if cols == b.ow { // whole output rows: add into y in place
			nnSgemmPre(threads, pre, nnBlocks{}, false, false, b.mg, area, b.cg, 1, w, b.cg, img, area, 1, y[r.y0*b.ow:], osp)
			continue
		}
		nnSgemmPre(threads, pre, nnBlocks{}, false, false, b.mg, area, b.cg, 1, w, b.cg, img, area, 0, prod, area)
		for m := range b.mg {
			for oy := range rows {
				at := m*osp + (r.y0+oy)*b.ow + r.x0
				addInto(y[at:at+cols], prod[m*area+oy*cols:])
			}
		}
	}
	if tail != nil {
		tail.finish(y, osp, 0, 0, b.mg, osp)
	}
}
