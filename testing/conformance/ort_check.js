// Runs ONNX backend tests on onnxruntime-node (CPU execution provider) and
// compares its outputs with the expected ones, as testing/conformance does
// for beamml: it is how testdata/README.md's claim that every listed test
// passes onnxruntime is checked.
//
// Usage: node ort_check.js [--rtol R] [--atol A] DIR...
//
// Each DIR is a test (a folder with model.onnx and test_data_set_N
// folders) or a folder searched recursively for tests. It needs
// onnxruntime-node where require finds it; install it with
//
//	mkdir -p out/ort && cd out/ort && ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund onnxruntime-node@1.30.0
//
// and run from the repository root with NODE_PATH=out/ort/node_modules.
// onnxruntime's StringNormalizer wants the en_US.UTF-8 locale: where the
// machine lacks it, make one with localedef -i en_US -f UTF-8
// DIR/en_US.UTF-8 and run with LOCPATH=DIR.
//
// It prints one line per test, "NAME: PASS", "NAME: FAIL: why" (ORT's
// outputs differ from the expected ones) or "NAME: ERROR: why" (ORT
// cannot load or run the test, or onnxruntime-node cannot hold one of its
// element types: bfloat16, float8, int4 and the other types outside
// onnxruntime-common's Tensor.Type), and ends with "N passed, N failed, N
// errors". Outputs compare as testdata/README.md says: same shape and
// element type; float32, float64 and float16 within atol + rtol·|want|
// (rtol 1e-3, atol 1e-4; NaN equals NaN); integers, bools and strings
// exactly. It exits 1 when a test fails or errs.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

// Tolerances, testdata/README.md's unless --rtol or --atol say otherwise.
let rtol = 1e-3;
let atol = 1e-4;

// ONNX TensorProto.DataType → onnxruntime-node tensor type, for the types
// onnxruntime-node holds.
const ortTypes = {
  1: 'float32', 2: 'uint8', 3: 'int8', 4: 'uint16', 5: 'int16', 6: 'int32', 7: 'int64',
  8: 'string', 9: 'bool', 10: 'float16', 11: 'float64', 12: 'uint32', 13: 'uint64',
};

// ONNX's names of the element types, for messages.
const onnxNames = {
  1: 'FLOAT', 2: 'UINT8', 3: 'INT8', 4: 'UINT16', 5: 'INT16', 6: 'INT32', 7: 'INT64', 8: 'STRING',
  9: 'BOOL', 10: 'FLOAT16', 11: 'DOUBLE', 12: 'UINT32', 13: 'UINT64', 14: 'COMPLEX64',
  15: 'COMPLEX128', 16: 'BFLOAT16', 17: 'FLOAT8E4M3FN', 18: 'FLOAT8E4M3FNUZ', 19: 'FLOAT8E5M2',
  20: 'FLOAT8E5M2FNUZ', 21: 'UINT4', 22: 'INT4', 23: 'FLOAT4E2M1', 24: 'FLOAT8E8M0', 25: 'UINT2',
  26: 'INT2',
};

// Reader decodes protobuf wire format: just what a TensorProto needs.
class Reader {
  constructor(buf) { this.buf = buf; this.pos = 0; }
  done() { return this.pos >= this.buf.length; }
  varint() { // as a BigInt, unsigned 64-bit
    let v = 0n;
    for (let shift = 0n; ; shift += 7n) {
      if (this.pos >= this.buf.length) throw new Error('truncated varint');
      const b = this.buf[this.pos++];
      v |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return BigInt.asUintN(64, v);
    }
  }
  bytes() {
    const n = Number(this.varint());
    if (this.pos + n > this.buf.length) throw new Error('truncated field');
    const b = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return b;
  }
  skip(wire) {
    switch (wire) {
      case 0: this.varint(); break;
      case 1: this.pos += 8; break;
      case 2: this.bytes(); break;
      case 5: this.pos += 4; break;
      default: throw new Error(`wire type ${wire}`);
    }
  }
}

// repeated appends a repeated scalar field's values, packed or not: read
// decodes one value from a Reader.
function repeated(r, wire, packedWire, out, read) {
  if (wire === 2 && packedWire !== 2) {
    const sub = new Reader(r.bytes());
    while (!sub.done()) out.push(read(sub));
  } else {
    out.push(read(r));
  }
}

const fixed32 = (r) => { const v = r.buf.readFloatLE(r.pos); r.pos += 4; return v; };
const fixed64 = (r) => { const v = r.buf.readDoubleLE(r.pos); r.pos += 8; return v; };

// readTensor parses a serialized TensorProto: {name, type (ONNX data type),
// dims, data} with data as onnxruntime-node holds the type (null where it
// does not).
function readTensor(file) {
  const r = new Reader(fs.readFileSync(file));
  const t = { name: '', type: 0, dims: [], raw: null, floats: [], int32s: [], strings: [], int64s: [], doubles: [], uint64s: [] };
  while (!r.done()) {
    const key = Number(r.varint());
    const field = key >>> 3;
    const wire = key & 7;
    switch (field) {
      case 1: repeated(r, wire, 0, t.dims, (s) => Number(BigInt.asIntN(64, s.varint()))); break;
      case 2: t.type = Number(r.varint()); break;
      case 4: repeated(r, wire, 5, t.floats, fixed32); break;
      case 5: repeated(r, wire, 0, t.int32s, (s) => Number(BigInt.asIntN(32, s.varint()))); break;
      case 6: t.strings.push(Buffer.from(r.bytes())); break;
      case 7: repeated(r, wire, 0, t.int64s, (s) => BigInt.asIntN(64, s.varint())); break;
      case 8: t.name = r.bytes().toString('utf8'); break;
      case 9: t.raw = Buffer.from(r.bytes()); break;
      case 10: repeated(r, wire, 1, t.doubles, fixed64); break;
      case 11: repeated(r, wire, 0, t.uint64s, (s) => s.varint()); break;
      case 13: throw new Error(`${file}: external data`);
      case 14: if (r.varint() !== 0n) throw new Error(`${file}: external data`); break;
      default: r.skip(wire);
    }
  }
  const n = t.dims.reduce((a, b) => a * b, 1);
  const type = ortTypes[t.type];
  if (!type) return { name: t.name, type: t.type, dims: t.dims, data: null };
  let data;
  if (type === 'string') {
    data = t.strings.map((b) => b.toString('utf8'));
  } else if (t.raw !== null) {
    const View = typedArray(type);
    data = new View(new Uint8Array(t.raw).buffer, 0, n); // copied, so aligned
  } else {
    switch (t.type) {
      case 1: data = Float32Array.from(t.floats); break;
      case 7: data = BigInt64Array.from(t.int64s); break;
      case 11: data = Float64Array.from(t.doubles); break;
      case 12: data = Uint32Array.from(t.uint64s, (v) => Number(v)); break;
      case 13: data = BigUint64Array.from(t.uint64s); break;
      default: data = typedArray(type).from(t.int32s); // int8-32, uint8-16, bool, float16's bits
    }
  }
  if (data.length !== n) throw new Error(`${file}: ${n} elements declared, ${data.length} present`);
  return { name: t.name, type: t.type, dims: t.dims, data };
}

function typedArray(type) {
  return {
    float32: Float32Array, uint8: Uint8Array, int8: Int8Array, uint16: Uint16Array, int16: Int16Array,
    int32: Int32Array, int64: BigInt64Array, bool: Uint8Array, float16: Uint16Array,
    float64: Float64Array, uint32: Uint32Array, uint64: BigUint64Array,
  }[type];
}

// half returns float16 bits as a number.
function half(h) {
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  const s = h & 0x8000 ? -1 : 1;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

// compare returns '' when ORT's output got matches want, and otherwise
// what differs first.
function compare(got, want) {
  const gotType = got.type;
  const wantType = ortTypes[want.type];
  const same = got.dims.length === want.dims.length && got.dims.every((d, i) => d === want.dims[i]);
  if (gotType !== wantType || !same) {
    return `got ${gotType}[${got.dims}], want ${wantType}[${want.dims}]`;
  }
  const g = got.data;
  const w = want.data;
  for (let i = 0; i < w.length; i++) {
    switch (wantType) {
      case 'float32': case 'float64': case 'float16': {
        const gi = wantType === 'float16' ? half(g[i]) : g[i];
        const wi = wantType === 'float16' ? half(w[i]) : w[i];
        if (Number.isNaN(gi) && Number.isNaN(wi)) continue;
        if (!Number.isFinite(wi) && gi === wi) continue;
        if (!(Math.abs(gi - wi) <= atol + rtol * Math.abs(wi))) {
          return `element ${i} is ${gi}, want ${wi} (rtol ${rtol}, atol ${atol})`;
        }
        break;
      }
      default:
        if (g[i] !== w[i]) return `element ${i} is ${JSON.stringify(String(g[i]))}, want ${JSON.stringify(String(w[i]))}`;
    }
  }
  return '';
}

// tests returns the test folders under dir, sorted.
function tests(dir) {
  if (fs.existsSync(path.join(dir, 'model.onnx'))) return [dir];
  const found = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (e.isDirectory()) found.push(...tests(path.join(dir, e.name)));
  }
  return found;
}

const files = (set, prefix) => fs.readdirSync(set)
  .filter((f) => f.startsWith(prefix) && f.endsWith('.pb'))
  .sort((a, b) => Number(a.slice(prefix.length, -3)) - Number(b.slice(prefix.length, -3)));

// check runs one test; it returns 'PASS', 'FAIL: why' or 'ERROR: why'.
// It reads every data set before it loads the model, so that a test with
// an element type onnxruntime-node cannot hold errs without running (the
// binding aborts the process on some such outputs, int4 among them).
async function check(dir) {
  const sets = fs.readdirSync(dir).filter((f) => f.startsWith('test_data_set_')).sort();
  if (sets.length === 0) return 'FAIL: no test_data_set_N folder';
  const data = [];
  for (const set of sets) {
    const setDir = path.join(dir, set);
    const read = (prefix) => files(setDir, prefix).map((f) => readTensor(path.join(setDir, f)));
    const d = { set, inputs: read('input_'), outputs: read('output_') };
    for (const [what, ts] of [['input', d.inputs], ['output', d.outputs]]) {
      for (const [k, t] of ts.entries()) {
        if (t.data === null) return `ERROR: ${set} ${what} ${k}: onnxruntime-node has no tensor of element type ${onnxNames[t.type] || t.type}`;
      }
    }
    data.push(d);
  }
  let session;
  try {
    session = await ort.InferenceSession.create(path.join(dir, 'model.onnx'), { logSeverityLevel: 3 });
  } catch (e) {
    return `ERROR: load: ${e.message.split('\n')[0]}`;
  }
  for (const { set, inputs, outputs } of data) {
    if (inputs.length !== session.inputNames.length) {
      return `ERROR: ${set}: ${inputs.length} input files for ${session.inputNames.length} inputs`;
    }
    const feeds = {};
    for (const [k, t] of inputs.entries()) {
      feeds[session.inputNames[k]] = new ort.Tensor(ortTypes[t.type], t.data, t.dims);
    }
    let outs;
    try {
      outs = await session.run(feeds);
    } catch (e) {
      return `ERROR: ${set}: run: ${e.message.split('\n')[0]}`;
    }
    for (const [k, want] of outputs.entries()) {
      const name = session.outputNames[k];
      const msg = compare(outs[name], want);
      if (msg) return `FAIL: ${set} output ${JSON.stringify(name)}: ${msg}`;
    }
  }
  return 'PASS';
}

async function main() {
  const dirs = [];
  const args = process.argv.slice(2);
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--rtol' || args[i] === '--atol') {
      const v = Number(args[++i]);
      if (!(v >= 0)) {
        console.error(`ort_check.js: ${args[i - 1]} ${args[i]}: not a tolerance`);
        process.exit(2);
      }
      if (args[i - 1] === '--rtol') rtol = v; else atol = v;
    } else {
      dirs.push(args[i]);
    }
  }
  if (dirs.length === 0) {
    console.error('usage: node ort_check.js [--rtol R] [--atol A] DIR...');
    process.exit(2);
  }
  const count = { PASS: 0, FAIL: 0, ERROR: 0 };
  for (const dir of dirs) {
    for (const t of tests(dir)) {
      let verdict;
      try {
        verdict = await check(t);
      } catch (e) {
        verdict = `ERROR: ${e.message}`;
      }
      count[verdict.split(':')[0]]++;
      console.log(`${path.relative(dir, t) || path.basename(t)}: ${verdict}`);
    }
  }
  console.log(`${count.PASS} passed, ${count.FAIL} failed, ${count.ERROR} errors`);
  process.exit(count.FAIL + count.ERROR > 0 ? 1 : 0);
}

main();
