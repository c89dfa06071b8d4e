package cpu

import (
	"fmt"
	"math"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// The classical machine-learning operators of ai.onnx.ml (all but the tree
// ensembles and ZipMap): the linear and SVM models, the feature transforms
// (Scaler, Normalizer, Binarizer, Imputer, ArrayFeatureExtractor,
// FeatureVectorizer) and the encoders (OneHotEncoder, CategoryMapper,
// LabelEncoder). What each computes, and the checks of its attributes, are
// in opsem (mlmodels.go, mlfeatures.go, mlencoders.go, mlscores.go); the
// attributes are read once per node, at compile time (registerAttrs). The
// models compute in float64 and output float32.

func init() {
	f64, str := inference.Float64, inference.String
	mlRegister("LinearClassifier", opsem.LinearClassifierOf, mlLinearClassifier, f64, str)
	mlRegister("LinearRegressor", opsem.LinearRegressorOf, mlLinearRegressor, f64)
	mlRegister("SVMClassifier", opsem.SVMClassifierOf, mlSVMClassifier, f64, str)
	mlRegister("SVMRegressor", opsem.SVMRegressorOf, mlSVMRegressor, f64)
	mlRegister("Scaler", opsem.ScalerOf, mlScaler, f64)
	mlRegister("Normalizer", opsem.NormalizerOf, mlNormalizer, f64)
	mlRegister("Binarizer", opsem.BinarizerOf, mlBinarizer, f64)
	mlRegister("Imputer", opsem.ImputerOf, mlImputer, f64)
	mlRegister("ArrayFeatureExtractor", func(opsem.Node) (struct{}, error) { return struct{}{}, nil }, mlArrayFeatureExtractor, f64, str)
	mlRegister("FeatureVectorizer", opsem.FeatureVectorizerOf, mlFeatureVectorizer, f64)
	mlRegister("OneHotEncoder", opsem.OneHotEncoderOf, mlOneHotEncoder, f64, str)
	mlRegister("CategoryMapper", opsem.CategoryMapperOf, mlCategoryMapper, str)
	mlRegister("LabelEncoder", opsem.LabelEncoderOf, mlLabelEncoder, f64, str, inference.Int16)
}

// mlRegister registers the kernel of op, an ai.onnx.ml operator: run, with
// the node's attributes as read reads them (once, at compile time); and the
// element types it computes besides the base types.
func mlRegister[P any](op string, read func(opsem.Node) (P, error), run func(opsem.Node, P, []inference.Tensor) ([]inference.Tensor, error), types ...inference.DType) {
	registerML(op, func(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
		if err := needInputs(in, 1); err != nil {
			return nil, err
		}
		p, err := readAttrs(n, in, read)
		if err != nil {
			return nil, err
		}
		return run(n, p, in)
	})
	registerAttrs(MLDomain+"."+op, read)
	registerTypes(MLDomain+"."+op, types...)
}

// mlFloat64s returns the elements of x, input i of a node that takes
// float32, float64, int64 or int32, as float64s: x's own for float64, else a
// copy made under r.
func mlFloat64s(r *limit.Run, i int, x inference.Tensor) ([]float64, error) {
	switch x.DType() {
	case inference.Float64:
		return dataOf[float64](x), nil
	case inference.Float32:
		return widened(r, dataOf[float32](x))
	case inference.Int64:
		return widened(r, dataOf[int64](x))
	case inference.Int32:
		return widened(r, dataOf[int32](x))
	}
	return nil, wantType(i, x, "float32, float64, int64 or int32")
}

func widened[T float32 | int64 | int32](r *limit.Run, x []T) ([]float64, error) {
	out, err := limit.MakeOverwritten[float64](r, len(x))
	if err != nil {
		return nil, err
	}
	for i, v := range x {
		out[i] = float64(v)
	}
	return out, nil
}

// mlRows returns the rows of input x, [N, C] or [C] (opsem.MLMatrix), as
// float64s, checking that it has the model's features columns.
func mlRows(r *limit.Run, x inference.Tensor, features int) (xs []float64, rows int, err error) {
	rows, cols, err := opsem.MLMatrix(x)
	if err != nil {
		return nil, 0, err
	}
	if cols != features {
		return nil, 0, fmt.Errorf("input %v has %d features, the model %d: %w", x, cols, features, inference.ErrShape)
	}
	xs, err = mlFloat64s(r, 0, x)
	return xs, rows, err
}

// mlScores is the Z output of a model: rows × width float32s, written a
// row at a time from a float64 row.
type mlScores struct {
	z     []float32
	width int
}

func newScores(r *limit.Run, rows, width int) (mlScores, []float64, error) {
	z, err := limit.MakeOverwritten[float32](r, rows, width)
	if err != nil {
		return mlScores{}, nil, err
	}
	row, err := limit.MakeOverwritten[float64](r, max(width, 2))
	return mlScores{z, width}, row, err
}

func (s mlScores) set(i int, row []float64) {
	for j, v := range row[:s.width] {
		s.z[i*s.width+j] = float32(v)
	}
}

func (s mlScores) output(n opsem.Node, j, rows int) (inference.Tensor, error) {
	return opsem.Output(n, j, []int{rows, s.width}, s.z)
}

// mlLabels is the Y output of a classifier: one label per row, int64s or
// strings as the node's labels are.
type mlLabels struct {
	labels opsem.Labels
	ints   []int64
	strs   []string
}

func newLabels(r *limit.Run, labels opsem.Labels, rows int) (mlLabels, error) {
	y := mlLabels{labels: labels}
	var err error
	if len(labels.Strings) > 0 {
		y.strs, err = limit.Make[string](r, rows)
	} else {
		y.ints, err = limit.MakeOverwritten[int64](r, rows)
	}
	return y, err
}

// set makes row i's label the label of class k.
func (y mlLabels) set(i, k int) {
	if y.strs != nil {
		y.strs[i] = y.labels.Strings[k]
	} else {
		y.ints[i] = y.labels.Ints[k]
	}
}

func (y mlLabels) output(n opsem.Node, rows int) (inference.Tensor, error) {
	if y.strs != nil {
		return opsem.Output(n, 0, []int{rows}, y.strs)
	}
	return opsem.Output(n, 0, []int{rows}, y.ints)
}

// classified returns a classifier's outputs, labels y and scores z.
func classified(n opsem.Node, rows int, y mlLabels, z mlScores) ([]inference.Tensor, error) {
	yt, err := y.output(n, rows)
	if err != nil {
		return nil, err
	}
	zt, err := z.output(n, 1, rows)
	if err != nil {
		return nil, err
	}
	return []inference.Tensor{yt, zt}, nil
}

// dot is Σ x[f]·w[f].
func dot(x []float64, w []float32) float64 {
	s := 0.0
	for f, v := range x {
		s += v * float64(w[f])
	}
	return s
}

func mlLinearClassifier(n opsem.Node, c *opsem.LinearClassifier, in []inference.Tensor) ([]inference.Tensor, error) {
	xs, rows, err := mlRows(n.Run, in[0], c.Features)
	if err != nil {
		return nil, err
	}
	z, row, err := newScores(n.Run, rows, c.ScoreWidth())
	if err != nil {
		return nil, err
	}
	y, err := newLabels(n.Run, c.Labels, rows)
	if err != nil {
		return nil, err
	}
	f := c.Features
	for i := range rows {
		x := xs[i*f : (i+1)*f]
		for k := range c.Classes {
			row[k] = float64(c.Intercepts[k]) + dot(x, c.Coefficients[k*f:(k+1)*f])
		}
		if c.Classes == 1 {
			y.set(i, boolIndex(row[0] > 0))
			if c.Binary {
				row[0], row[1] = 1-row[0], row[0]
			} else {
				c.Post.Apply(row[:1])
			}
		} else {
			y.set(i, opsem.ArgMax(row[:c.Classes]))
			c.Post.Apply(row[:c.Classes])
		}
		z.set(i, row)
	}
	return classified(n, rows, y, z)
}

// boolIndex is 1 for true, 0 for false.
func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

func mlLinearRegressor(n opsem.Node, m *opsem.LinearRegressor, in []inference.Tensor) ([]inference.Tensor, error) {
	xs, rows, err := mlRows(n.Run, in[0], m.Features)
	if err != nil {
		return nil, err
	}
	z, row, err := newScores(n.Run, rows, m.Targets)
	if err != nil {
		return nil, err
	}
	f := m.Features
	for i := range rows {
		x := xs[i*f : (i+1)*f]
		for t := range m.Targets {
			row[t] = dot(x, m.Coefficients[t*f:(t+1)*f])
			if m.Intercepts != nil {
				row[t] += float64(m.Intercepts[t])
			}
		}
		m.Post.Apply(row[:m.Targets])
		z.set(i, row)
	}
	out, err := z.output(n, 0, rows)
	return []inference.Tensor{out}, err
}

func mlSVMRegressor(n opsem.Node, m *opsem.SVMRegressor, in []inference.Tensor) ([]inference.Tensor, error) {
	xs, rows, err := mlRows(n.Run, in[0], m.Features)
	if err != nil {
		return nil, err
	}
	z, row, err := newScores(n.Run, rows, 1)
	if err != nil {
		return nil, err
	}
	f := m.Features
	for i := range rows {
		if err := n.Run.Err(); err != nil {
			return nil, err
		}
		x := xs[i*f : (i+1)*f]
		s := m.Rho
		if m.Vectors == 0 {
			s += dot(x, m.Coefficients)
		}
		for v := range m.Vectors {
			s += float64(m.Coefficients[v]) * m.Value(x, m.SupportVectors[v*f:(v+1)*f])
		}
		if m.OneClass {
			s = float64(2*boolIndex(s > 0) - 1)
		}
		row[0] = s
		m.Post.Apply(row[:1])
		z.set(i, row)
	}
	out, err := z.output(n, 0, rows)
	return []inference.Tensor{out}, err
}

// svmScratch is what SVMClassifier computes for one row: the kernel value
// of each support vector, the decision value of each pair of classes, the
// votes, and for probabilities the pairwise matrix, libsvm's Q and Qp, and
// the class probabilities.
type svmScratch struct {
	kernels, decisions []float64
	votes              []int64
	pairwise, q, qp    []float64
	probs              []float64
}

func newSVMScratch(r *limit.Run, c *opsem.SVMClassifier) (*svmScratch, error) {
	s := &svmScratch{}
	k := c.Classes
	var err error
	for _, b := range []struct {
		buf  *[]float64
		size int
	}{{&s.kernels, c.Vectors}, {&s.decisions, c.Pairs()}, {&s.pairwise, k * k}, {&s.q, k * k}, {&s.qp, k}, {&s.probs, k}} {
		if err == nil {
			*b.buf, err = limit.Make[float64](r, b.size)
		}
	}
	if err == nil {
		s.votes, err = limit.Make[int64](r, k)
	}
	return s, err
}

func mlSVMClassifier(n opsem.Node, c *opsem.SVMClassifier, in []inference.Tensor) ([]inference.Tensor, error) {
	xs, rows, err := mlRows(n.Run, in[0], c.Features)
	if err != nil {
		return nil, err
	}
	z, row, err := newScores(n.Run, rows, c.ScoreWidth())
	if err != nil {
		return nil, err
	}
	y, err := newLabels(n.Run, c.Labels, rows)
	if err != nil {
		return nil, err
	}
	var s *svmScratch
	if c.Vectors > 0 {
		if s, err = newSVMScratch(n.Run, c); err != nil {
			return nil, err
		}
	}
	f := c.Features
	for i := range rows {
		if err := n.Run.Err(); err != nil {
			return nil, err
		}
		x := xs[i*f : (i+1)*f]
		if c.Vectors == 0 {
			y.set(i, svmLinear(c, x, row))
			z.set(i, row)
			continue
		}
		label, scores := svmOneVsOne(c, x, s)
		y.set(i, label)
		z.set(i, scores)
	}
	return classified(n, rows, y, z)
}

// svmLinear scores row x of a linear SVMClassifier into row and returns
// its class.
func svmLinear(c *opsem.SVMClassifier, x, row []float64) int {
	scores := row[:c.Classes]
	for k := range scores {
		scores[k] = dot(x, c.Coefficients[k*c.Features:(k+1)*c.Features]) + float64(c.Rho[0])
	}
	k := opsem.ArgMax(scores)
	if c.Classes == 2 && len(c.ProbA) == 0 {
		if top := scores[k]; c.AllPositive && top >= 0.5 || !c.AllPositive && top > 0 {
			k = 1
		}
	}
	c.Post.Apply(scores)
	return k
}

// svmOneVsOne scores row x of an SVMClassifier with support vectors: its
// class and its row of Z.
func svmOneVsOne(c *opsem.SVMClassifier, x []float64, s *svmScratch) (int, []float64) {
	f := c.Features
	for v := range s.kernels {
		s.kernels[v] = c.Value(x, c.SupportVectors[v*f:(v+1)*f])
	}
	clear(s.votes)
	pair := 0
	for i := range c.Classes {
		for j := i + 1; j < c.Classes; j++ {
			d := float64(c.Rho[pair])
			for v := c.Starts[i]; v < c.Starts[i]+c.VectorsPerClass[i]; v++ {
				d += float64(c.Coefficients[(j-1)*c.Vectors+v]) * s.kernels[v]
			}
			for v := c.Starts[j]; v < c.Starts[j]+c.VectorsPerClass[j]; v++ {
				d += float64(c.Coefficients[i*c.Vectors+v]) * s.kernels[v]
			}
			s.decisions[pair] = d
			if d > 0 {
				s.votes[i]++
			} else {
				s.votes[j]++
			}
			pair++
		}
	}
	label := opsem.ArgMax(s.votes)
	switch k := c.Classes; {
	case len(c.ProbA) > 0:
		pair = 0
		for i := range k {
			for j := i + 1; j < k; j++ {
				p := opsem.SigmoidProbability(s.decisions[pair], float64(c.ProbA[pair]), float64(c.ProbB[pair]))
				p = min(max(p, 1e-7), 1-1e-7)
				s.pairwise[i*k+j], s.pairwise[j*k+i] = p, 1-p
				pair++
			}
		}
		opsem.MulticlassProbability(k, s.pairwise, s.probs, s.q, s.qp)
		c.Post.Apply(s.probs)
		return label, s.probs
	case k == 2:
		d := s.decisions[0]
		s.pairwise[0], s.pairwise[1] = 1-d, d
		if c.Post == opsem.PostNone {
			s.pairwise[0] = -d
		}
		return label, s.pairwise[:2]
	}
	c.Post.Apply(s.decisions)
	return label, s.decisions
}

func mlScaler(n opsem.Node, s *opsem.Scaler, in []inference.Tensor) ([]inference.Tensor, error) {
	x := in[0]
	features, err := mlFeatureAxis(x, len(s.Scale), "offset and scale")
	if err != nil {
		return nil, err
	}
	xs, err := mlFloat64s(n.Run, 0, x)
	if err != nil {
		return nil, err
	}
	y, err := limit.MakeOverwritten[float32](n.Run, len(xs))
	if err != nil {
		return nil, err
	}
	for i, v := range xs {
		j := 0
		if len(s.Scale) > 1 {
			j = i % features
		}
		y[i] = float32((v - float64(s.Offset[j])) * float64(s.Scale[j]))
	}
	return opsem.Single(n, x.Shape(), y)
}

// mlFeatureAxis returns the size of x's last axis, its features, checking
// that values per feature (what) hold one value or one per feature.
func mlFeatureAxis(x inference.Tensor, values int, what string) (int, error) {
	if x.Rank() == 0 {
		return 0, fmt.Errorf("input %v is a scalar, want features along its last axis: %w", x, inference.ErrShape)
	}
	features := x.Dim(x.Rank() - 1)
	if values != 1 && values != features {
		return 0, fmt.Errorf("%s hold %d values, input %v has %d features: %w", what, values, x, features, inference.ErrShape)
	}
	return features, nil
}

func mlNormalizer(n opsem.Node, z *opsem.Normalizer, in []inference.Tensor) ([]inference.Tensor, error) {
	x := in[0]
	rows, cols, err := opsem.MLMatrix(x)
	if err != nil {
		return nil, err
	}
	xs, err := mlFloat64s(n.Run, 0, x)
	if err != nil {
		return nil, err
	}
	y, err := limit.MakeOverwritten[float32](n.Run, len(xs))
	if err != nil {
		return nil, err
	}
	for i := range rows {
		row, out := xs[i*cols:(i+1)*cols], y[i*cols:(i+1)*cols]
		m := 0.0
		switch z.Norm {
		case opsem.NormMax:
			m = -math.MaxFloat32
			for _, v := range row {
				if v > m { // a NaN is skipped, as std::max skips it
					m = v
				}
			}
		case opsem.NormL1:
			for _, v := range row {
				m += math.Abs(v)
			}
		case opsem.NormL2:
			for _, v := range row {
				m += v * v
			}
		}
		for j, v := range row {
			switch {
			case m == 0:
				out[j] = float32(v)
			case z.Norm == opsem.NormL2:
				out[j] = float32(math.Copysign(math.Sqrt(v*v/m), v))
			default:
				out[j] = float32(v / m)
			}
		}
	}
	return opsem.Single(n, x.Shape(), y)
}

func mlBinarizer(n opsem.Node, b *opsem.Binarizer, in []inference.Tensor) ([]inference.Tensor, error) {
	x, t := in[0], float64(b.Threshold)
	switch x.DType() {
	case inference.Float32:
		return binarized(n, x, dataOf[float32](x), t)
	case inference.Float64:
		return binarized(n, x, dataOf[float64](x), t)
	case inference.Int64:
		return binarized(n, x, dataOf[int64](x), t)
	case inference.Int32:
		return binarized(n, x, dataOf[int32](x), t)
	}
	return nil, wantType(0, x, "float32, float64, int64 or int32")
}

// binarized is Binarizer's output: 1 where x > t, 0 elsewhere (NaN
// included), in x's type.
func binarized[T float32 | float64 | int64 | int32](n opsem.Node, x inference.Tensor, d []T, t float64) ([]inference.Tensor, error) {
	return mapOutput(n, x.Shape(), d, func(v T) T { return T(boolIndex(float64(v) > t)) })
}

func mlImputer(n opsem.Node, m *opsem.Imputer, in []inference.Tensor) ([]inference.Tensor, error) {
	x := in[0]
	features, err := mlFeatureAxis(x, m.Values(), "imputed values")
	if err != nil {
		return nil, err
	}
	floatInput := x.DType() == inference.Float32 || x.DType() == inference.Float64
	switch {
	case floatInput && len(m.Floats) == 0:
		return nil, fmt.Errorf("input %v is float, the node imputes imputed_value_int64s: %w", x, inference.ErrType)
	case (x.DType() == inference.Int64 || x.DType() == inference.Int32) && len(m.Ints) == 0:
		return nil, fmt.Errorf("input %v is integer, the node imputes imputed_value_floats: %w", x, inference.ErrType)
	}
	replacedNaN := math.IsNaN(float64(m.ReplacedFloat))
	switch x.DType() {
	case inference.Float32:
		return imputed(n, x, features, m.Floats, func(v float32) float32 { return v }, m.ReplacedFloat, replacedNaN)
	case inference.Float64:
		return imputed(n, x, features, m.Floats, func(v float32) float64 { return float64(v) }, float64(m.ReplacedFloat), replacedNaN)
	case inference.Int64:
		return imputed(n, x, features, m.Ints, func(v int64) int64 { return v }, m.ReplacedInt, false)
	case inference.Int32:
		for _, v := range m.Ints {
			if v != int64(int32(v)) {
				return nil, fmt.Errorf("input %v is int32, imputed value %d is out of its range: %w", x, v, inference.ErrType)
			}
		}
		return imputed(n, x, features, m.Ints, func(v int64) int32 { return int32(v) }, int32(m.ReplacedInt), false)
	}
	return nil, wantType(0, x, "float32, float64, int64 or int32")
}

// imputed is Imputer's output for x of element type T: values, converted
// by conv, replace the elements equal to replaced (NaN ones when
// replacedNaN), the value of the element's feature or the one value.
func imputed[T float32 | float64 | int64 | int32, V float32 | int64](n opsem.Node, x inference.Tensor, features int, values []V, conv func(V) T, replaced T, replacedNaN bool) ([]inference.Tensor, error) {
	d := dataOf[T](x)
	y, err := limit.MakeOverwritten[T](n.Run, len(d))
	if err != nil {
		return nil, err
	}
	for i, v := range d {
		if v != replaced && !(replacedNaN && v != v) {
			y[i] = v
			continue
		}
		j := 0
		if len(values) > 1 {
			j = i % features
		}
		y[i] = conv(values[j])
	}
	return opsem.Single(n, x.Shape(), y)
}

func mlArrayFeatureExtractor(n opsem.Node, _ struct{}, in []inference.Tensor) ([]inference.Tensor, error) {
	if err := needInputs(in, 2); err != nil {
		return nil, err
	}
	x := in[0]
	if x.Rank() == 0 {
		return nil, fmt.Errorf("input 0 %v is a scalar, want an axis to select from: %w", x, inference.ErrShape)
	}
	var idx []int64
	switch in[1].DType() {
	case inference.Int64:
		idx = dataOf[int64](in[1])
	case inference.Int32:
		var err error
		if idx, err = int64sUnder(n.Run, in[1]); err != nil {
			return nil, err
		}
	default:
		return nil, wantType(1, in[1], "int64")
	}
	last := x.Dim(x.Rank() - 1)
	for i, v := range idx {
		if v < 0 || v >= int64(last) {
			return nil, fmt.Errorf("input 1 element %d is %d, out of range for the last axis of input 0 %v: %w", i, v, x, inference.ErrIndexOutOfRange)
		}
	}
	shape := x.Shape()
	if len(shape) == 1 {
		shape = []int{1, len(idx)}
	} else {
		shape[len(shape)-1] = len(idx)
	}
	outer := 1
	if last > 0 {
		outer = x.Len() / last
	} else {
		for _, d := range shape[:len(shape)-1] {
			outer *= d
		}
	}
	offs, err := limit.MakeOverwritten[int](n.Run, outer, len(idx))
	if err != nil {
		return nil, err
	}
	for o := range outer {
		for j, v := range idx {
			offs[o*len(idx)+j] = o*last + int(v)
		}
	}
	y, err := take(n.Run, x, shape, offs, inference.Tensor{})
	return []inference.Tensor{y}, err
}

func mlFeatureVectorizer(n opsem.Node, v *opsem.FeatureVectorizer, in []inference.Tensor) ([]inference.Tensor, error) {
	if len(in) != len(v.Dims) {
		return nil, fmt.Errorf("%d inputs, inputdimensions has %d values: %w", len(in), len(v.Dims), inference.ErrBadModel)
	}
	rows := -1
	for i, x := range in {
		r, _, err := vectorizedRows(i, x)
		if err != nil {
			return nil, err
		}
		if rows >= 0 && r != rows {
			return nil, fmt.Errorf("input %d %v has %d rows, input 0 %v has %d: %w", i, x, r, in[0], rows, inference.ErrShape)
		}
		rows = r
	}
	y, err := limit.Make[float32](n.Run, rows, v.Total)
	if err != nil {
		return nil, err
	}
	at := 0
	for i, x := range in {
		_, size, _ := vectorizedRows(i, x)
		xs, err := mlFloat64s(n.Run, i, x)
		if err != nil {
			return nil, err
		}
		cols := min(size, v.Dims[i])
		for r := range rows {
			for c, val := range xs[r*size : r*size+cols] {
				y[r*v.Total+at+c] = float32(val)
			}
		}
		at += v.Dims[i]
	}
	return opsem.Single(n, []int{rows, v.Total}, y)
}

// vectorizedRows returns the rows of FeatureVectorizer's input i and the
// values in each: [N, …] is N rows, [C] one.
func vectorizedRows(i int, x inference.Tensor) (rows, size int, err error) {
	switch {
	case x.Rank() == 0:
		return 0, 0, fmt.Errorf("input %d %v is a scalar, want [N, C] or [C]: %w", i, x, inference.ErrShape)
	case x.Rank() == 1:
		return 1, x.Dim(0), nil
	}
	size = 1
	for _, d := range x.Shape()[1:] {
		size *= d
	}
	return x.Dim(0), size, nil
}

func mlOneHotEncoder(n opsem.Node, e *opsem.OneHotEncoder, in []inference.Tensor) ([]inference.Tensor, error) {
	x := in[0]
	shape := append(x.Shape(), e.Categories)
	y, err := limit.Make[float32](n.Run, shape...)
	if err != nil {
		return nil, err
	}
	set := func(i, col int, ok bool, v any) error {
		switch {
		case ok:
			y[i*e.Categories+col] = 1
		case !e.Zeros:
			return fmt.Errorf("input element %d (%v) is none of the %d categories, and zeros is 0: %w", i, v, e.Categories, inference.ErrIndexOutOfRange)
		}
		return nil
	}
	if x.DType() == inference.String {
		if e.Strings == nil {
			return nil, fmt.Errorf("input %v holds strings, the categories are cats_int64s: %w", x, inference.ErrType)
		}
		for i, v := range dataOf[string](x) {
			col, ok := e.Strings[v]
			if err := set(i, col, ok, v); err != nil {
				return nil, err
			}
		}
		return opsem.Single(n, shape, y)
	}
	xs, err := mlFloat64s(n.Run, 0, x)
	if err != nil {
		return nil, err
	}
	if e.Ints == nil {
		return nil, fmt.Errorf("input %v holds numbers, the categories are cats_strings: %w", x, inference.ErrType)
	}
	for i, v := range xs {
		col, ok := 0, false
		if t := math.Trunc(v); t >= math.MinInt64 && t < math.MaxInt64 { // NaN is neither
			col, ok = e.Ints[int64(t)]
		}
		if err := set(i, col, ok, v); err != nil {
			return nil, err
		}
	}
	return opsem.Single(n, shape, y)
}

func mlCategoryMapper(n opsem.Node, m *opsem.CategoryMapper, in []inference.Tensor) ([]inference.Tensor, error) {
	x := in[0]
	switch x.DType() {
	case inference.String:
		return mapOutput(n, x.Shape(), dataOf[string](x), func(s string) int64 {
			if v, ok := m.ToInt[s]; ok {
				return v
			}
			return m.DefaultInt
		})
	case inference.Int64:
		return mapOutput(n, x.Shape(), dataOf[int64](x), func(i int64) string {
			if s, ok := m.ToString[i]; ok {
				return s
			}
			return m.DefaultString
		})
	}
	return nil, wantType(0, x, "string or int64")
}

func mlLabelEncoder(n opsem.Node, e *opsem.LabelEncoder, in []inference.Tensor) ([]inference.Tensor, error) {
	x := in[0]
	if e.Version1 {
		switch x.DType() {
		case inference.String:
			return mapOutput(n, x.Shape(), dataOf[string](x), func(s string) int64 {
				if i, ok := e.ClassIndex[s]; ok {
					return int64(i)
				}
				return e.DefaultInt
			})
		case inference.Int64:
			return mapOutput(n, x.Shape(), dataOf[int64](x), func(i int64) string {
				if i >= 0 && i < int64(len(e.Classes)) {
					return e.Classes[i]
				}
				return e.DefaultString
			})
		}
		return nil, wantType(0, x, "string or int64")
	}
	if x.DType() != e.Keys {
		return nil, fmt.Errorf("input %v, the keys are %v: %w", x, e.Keys, inference.ErrType)
	}
	offs, err := limit.MakeOverwritten[int](n.Run, x.Len())
	if err != nil {
		return nil, err
	}
	e.Lookup(x, offs)
	y, err := take(n.Run, e.Values, x.Shape(), offs, e.Default)
	return []inference.Tensor{y}, err
}
