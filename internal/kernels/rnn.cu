// Recurrent kernels: the cells of RNN, GRU and LSTM, one time step at a
// time, around the cuBLAS GEMMs of inference/cuda/lower_rnn.go. The input
// projection X·Wᵀ of every step (xw) and the step's recurrent product
// H·Rᵀ (gates) come from the GEMMs; a kernel adds the biases, applies the
// activations and writes the new state and the step's Y.
//
// Shapes, in elements: xw holds a row of dirs·gh values (gh = gates·hidden,
// direction d at d·gh) per (t, b), at row t·xt + b·xb; gates is
// [dirs, batch, gh]; B is [dirs, 2·gh] (Wb then Rb); P is [dirs, 3·hidden]
// (Pi, Po, Pf). A state (H or C) element (d, b, j) is at d·sd + b·sr + j,
// the step's Y element at t·yt + d·yd + b·yb + j. Direction d runs time
// step t = step, or seq − 1 − step when bit d of rev is set.
#include "common.cuh"

// Cells (rnn_cell_f32's cell).
#define CELL_RNN 0
#define CELL_GRU 1
#define CELL_LSTM 2

// Activation codes (opsem.RecurrentActivation's names).
#define RNN_TANH 0
#define RNN_SIGMOID 1
#define RNN_RELU 2
#define RNN_SOFTSIGN 3
#define RNN_SOFTPLUS 4
#define RNN_AFFINE 5
#define RNN_LEAKYRELU 6
#define RNN_THRESHOLDEDRELU 7
#define RNN_SCALEDTANH 8
#define RNN_HARDSIGMOID 9
#define RNN_ELU 10

// rnn_act applies activation code to x (after clip, when clip > 0).
DEVICE float rnn_act(long long code, float a, float b, float clip, float x) {
	if (clip > 0.0f) x = fminf(clip, fmaxf(-clip, x));
	switch (code) {
	case RNN_TANH: return tanhf(x);
	case RNN_SIGMOID: return x >= 0.0f ? 1.0f / (1.0f + expf(-x)) : expf(x) / (1.0f + expf(x));
	case RNN_RELU: return fmaxf(x, 0.0f);
	case RNN_SOFTSIGN: return x / (1.0f + fabsf(x));
	case RNN_SOFTPLUS: return x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x));
	case RNN_AFFINE: return a * x + b;
	case RNN_LEAKYRELU: return x < 0.0f ? a * x : x;
	case RNN_THRESHOLDEDRELU: return x > a ? x : 0.0f;
	case RNN_SCALEDTANH: return a * tanhf(b * x);
	case RNN_HARDSIGMOID: return fmaxf(0.0f, fminf(1.0f, a * x + b));
	case RNN_ELU: return x < 0.0f ? a * (expf(x) - 1.0f) : x;
	}
	return x;
}

// rnn_len is row b's sequence length: lens[b] (int32 or int64, lt T_I32 or
// T_I64), or seq without lens.
DEVICE long long rnn_len(const void *lens, long long lt, long long b, long long seq) {
	if (!lens) return seq;
	if (lt == T_I32) return ((const int *)lens)[b];
	return ((const long long *)lens)[b];
}

// rnn_pre is gate k's pre-activation x·W + (Wb + Rb) + h·R of one
// element: xr, br and gr point at the element's gate 0 in xw, B (null:
// no bias) and gates (null: the previous state is zero, so is h·R).
DEVICE float rnn_pre(const float *xr, const float *br, const float *gr, long long k, long long hidden, long long gh) {
	long long o = k * hidden;
	float v = xr[o];
	if (br) v += br[o] + br[gh + o];
	if (gr) v += gr[o];
	return v;
}

// rnn_cell_f32 finishes time step step of directions d0 … d0+nd−1 (of
// dirs) for every batch row and hidden unit, with the activations f, g, h
// (codes and their alpha, beta) of those directions:
//
//	RNN:  H = f(p0)
//	GRU:  z = f(p0), h' = g(p2) or, with lbr, g(xw2 + Wb2 + r·(hr2 + Rb2))
//	      with r = f(p1); H = (1 − z)·h' + z·H
//	LSTM: i = f(p0 + Pi·C), f' = 1 − i with input_forget, else f(p2 + Pf·C),
//	      c = g(p3), C = f'·C + i·c, o = f(p1 + Po·C), H = o·h(C)
//
// where pk is gate k's rnn_pre (rec 0: the previous state is zero and
// gates is not read); a GRU without lbr finds (r⊙H)·Rhᵀ in its h gate
// (rnn_gru_reset_f32 and a GEMM). The previous states are hprev and cprev
// (null: zero); the new ones go to hout and cout, which may be the same
// buffers. A row past its sequence length keeps its state and writes
// zeros to y (null: no Y). peep may be null.
KERNEL rnn_cell_f32(long long cell, long long step, long long seq, long long d0, long long nd, long long dirs,
                    long long rev, long long batch, long long hidden, const float *__restrict__ xw, long long xt,
                    long long xb, const float *__restrict__ gates, long long rec, const float *__restrict__ bias,
                    const float *__restrict__ peep, const float *hprev, float *hout, const float *cprev, float *cout,
                    long long sd, long long sr, float *__restrict__ y, long long yt, long long yd, long long yb,
                    const void *__restrict__ lens, long long lt, long long *err, long long site, double clip,
                    long long lbr, long long inputForget, long long fc, double fa, double fb, long long gc, double ga,
                    double gb, long long hc, double ha, double hb) {
	long long gh = (cell == CELL_RNN ? 1 : cell == CELL_GRU ? 3 : 4) * hidden;
	float fclip = (float)clip, fA = (float)fa, fB = (float)fb, gA = (float)ga, gB = (float)gb, hA = (float)ha,
	      hB = (float)hb;
	GRID_STRIDE(i, nd * batch * hidden) {
		long long j = i % hidden, b = (i / hidden) % batch, d = d0 + i / (hidden * batch);
		long long t = (rev >> d) & 1 ? seq - 1 - step : step;
		if (err && step == 0 && j == 0 && d == d0) { // sequence_lens computed on the device: checked once per row
			long long len = rnn_len(lens, lt, b, seq);
			if (len < 0 || len > seq) report(err, site, E_RANGE, len, seq);
		}
		long long s = d * sd + b * sr + j;
		float hp = hprev ? hprev[s] : 0.0f;
		float cp = cprev ? cprev[s] : 0.0f;
		if (t >= rnn_len(lens, lt, b, seq)) {
			hout[s] = hp;
			if (cout) cout[s] = cp;
			if (y) y[t * yt + d * yd + b * yb + j] = 0.0f;
			continue;
		}
		const float *xr = xw + (t * xt + b * xb) * dirs * gh + d * gh + j;
		const float *br = bias ? bias + d * 2 * gh + j : 0;
		const float *gr = rec ? gates + (d * batch + b) * gh + j : 0;
		float h;
		if (cell == CELL_RNN) {
			h = rnn_act(fc, fA, fB, fclip, rnn_pre(xr, br, gr, 0, hidden, gh));
		} else if (cell == CELL_GRU) {
			float z = rnn_act(fc, fA, fB, fclip, rnn_pre(xr, br, gr, 0, hidden, gh));
			float pre;
			if (lbr) {
				float rg = rnn_act(fc, fA, fB, fclip, rnn_pre(xr, br, gr, 1, hidden, gh));
				float hr = gr ? gr[2 * hidden] : 0.0f;
				if (br) hr += br[gh + 2 * hidden];
				pre = xr[2 * hidden];
				if (br) pre += br[2 * hidden];
				pre += rg * hr;
			} else {
				pre = rnn_pre(xr, br, gr, 2, hidden, gh);
			}
			float hh = rnn_act(gc, gA, gB, fclip, pre);
			h = (1.0f - z) * hh + z * hp;
		} else {
			const float *pd = peep ? peep + d * 3 * hidden + j : 0;
			float pi = rnn_pre(xr, br, gr, 0, hidden, gh), po = rnn_pre(xr, br, gr, 1, hidden, gh);
			float pf = rnn_pre(xr, br, gr, 2, hidden, gh), pc = rnn_pre(xr, br, gr, 3, hidden, gh);
			if (pd) {
				pi += pd[0] * cp;
				pf += pd[2 * hidden] * cp;
			}
			float ig = rnn_act(fc, fA, fB, fclip, pi);
			float fg = inputForget ? 1.0f - ig : rnn_act(fc, fA, fB, fclip, pf);
			float cg = rnn_act(gc, gA, gB, fclip, pc);
			float c = fg * cp + ig * cg;
			if (pd) po += pd[hidden] * c;
			float og = rnn_act(fc, fA, fB, fclip, po);
			h = og * rnn_act(hc, hA, hB, 0.0f, c);
			cout[s] = c;
		}
		hout[s] = h;
		if (y) y[t * yt + d * yd + b * yb + j] = h;
	}
}

// rnn_gru_reset_f32 writes r⊙H of time step step to tmp, [dirs, batch,
// hidden], for a GRU without linear_before_reset: r = f(p1) as in
// rnn_cell_f32, with gates holding H·Rrᵀ (every row, past its length or
// not: the cell keeps those rows' state).
KERNEL rnn_gru_reset_f32(long long step, long long seq, long long d0, long long nd, long long dirs, long long rev,
                         long long batch, long long hidden, const float *__restrict__ xw, long long xt, long long xb,
                         const float *__restrict__ gates, const float *__restrict__ bias,
                         const float *__restrict__ hprev, long long sd, long long sr, float *__restrict__ tmp,
                         double clip, long long fc, double fa, double fb) {
	long long gh = 3 * hidden;
	GRID_STRIDE(i, nd * batch * hidden) {
		long long j = i % hidden, b = (i / hidden) % batch, d = d0 + i / (hidden * batch);
		long long t = (rev >> d) & 1 ? seq - 1 - step : step;
		const float *xr = xw + (t * xt + b * xb) * dirs * gh + d * gh + j;
		const float *br = bias ? bias + d * 2 * gh + j : 0;
		const float *gr = gates + (d * batch + b) * gh + j;
		float rg = rnn_act(fc, (float)fa, (float)fb, (float)clip, rnn_pre(xr, br, gr, 1, hidden, gh));
		tmp[(d * batch + b) * hidden + j] = rg * hprev[d * sd + b * sr + j];
	}
}
