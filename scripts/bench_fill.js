// The fill rules of the CPU benchmark's manifest (models.json), stated in
// testing/benchcpu/manifest.go, for scripts/ort_bench.js; kept apart from
// it so that testing/benchcpu's TestFillsMatchNode can check, without
// onnxruntime-node, that both sides fill the same bits.
'use strict';

// fmix32 is MurmurHash3's 32-bit finalizer, on an unsigned 32-bit integer.
function fmix32(h) {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

// fillData returns the manifest input spec's values at batch size batch:
// {type: 'float32' or 'int64', data (a Float32Array or BigInt64Array),
// dims}.
function fillData(spec, batch) {
  const dims = spec.shape.map((d) => (d === -1 ? batch : d));
  const n = dims.reduce((a, b) => a * b, 1);
  switch (spec.fill) {
    case 'sin': {
      const data = new Float32Array(n);
      for (let i = 0; i < n; i++) data[i] = Math.sin(i) * 0.5 + 0.5;
      return { type: 'float32', data, dims };
    }
    case 'uniform': {
      const data = new Float32Array(n);
      for (let i = 0; i < n; i++) data[i] = spec.low + (spec.high - spec.low) * (fmix32(i >>> 0) / 4294967296);
      return { type: 'float32', data, dims };
    }
    default:
  }
  const data = new BigInt64Array(n);
  const last = dims[dims.length - 1];
  for (let i = 0; i < n; i++) {
    switch (spec.fill) {
      case 'ids': data[i] = BigInt((i * 7919 + 13) % spec.vocab); break;
      case 'mask': data[i] = i % last >= last - Math.floor(last / 4) ? 0n : 1n; break;
      default: throw new Error(`input ${spec.name}: unknown fill ${JSON.stringify(spec.fill)}`);
    }
  }
  return { type: 'int64', data, dims };
}

module.exports = { fillData };
