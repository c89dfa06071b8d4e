// Runs every model of testing/mlmodels/testdata (written by
// scripts/export_ml_models.py) in ONNX Runtime (onnxruntime-node 1.30.0,
// CPU execution provider) on its test_data_set_0 inputs and compares the
// outputs with the expected ones, which come from scikit-learn or XGBoost,
// not from a runtime. Prints a markdown table (model, ops, ORT match,
// max |Δ|) and exits 1 when a model does not load, does not run or does
// not match.
//
// Usage: node scripts/check_ml_models.js [TESTDATA [PROBES]]
//
// TESTDATA defaults to testing/mlmodels/testdata, PROBES to
// out/mlmodels/probes; onnxruntime-node is loaded from
// out/ort/node_modules (ORT_DIR overrides out/ort). Install it with
//   (mkdir -p out/ort && cd out/ort && ONNXRUNTIME_NODE_INSTALL=skip \
//    npm install --no-audit --no-fund onnxruntime-node@1.30.0)
//
// The rule: labels and other integer or string outputs are equal; float
// outputs satisfy |ort - expected| <= 1e-5 + 1e-4·|expected| element by
// element (NaN only where NaN is expected).
//
// onnxruntime-node returns no non-tensor output ("Non tensor type is
// temporarily not supported"), so a ZipMap's sequence of maps is not
// fetched. For such a model the probe PROBES/NAME.onnx, the same graph
// with the ZipMap's input as one more output, is run instead and that
// tensor is compared with the values of the expected maps, row by row in
// key order; the keys themselves are checked to be the same in every row.
// The .pb files are read with the small protobuf decoder below (TensorProto,
// SequenceProto, MapProto; ModelProto only for its node op types).
'use strict';
const fs = require('fs');
const path = require('path');

const root = path.join(__dirname, '..');
const ortDir = process.env.ORT_DIR || path.join(root, 'out', 'ort');
const ort = require(path.join(ortDir, 'node_modules', 'onnxruntime-node'));
const RTOL = 1e-4;
const ATOL = 1e-5;

// ---------------------------------------------------------------- protobuf

function readVarint(buf, pos) {
  let value = 0n;
  let shift = 0n;
  for (;;) {
    const b = buf[pos++];
    value |= BigInt(b & 0x7f) << shift;
    if (b < 0x80) return [value, pos];
    shift += 7n;
  }
}

// fields yields {field, wire, value} for each field of a message: value is
// a BigInt (varint), or a Buffer (length-delimited, 32- or 64-bit).
function* fields(buf) {
  let pos = 0;
  while (pos < buf.length) {
    let key;
    [key, pos] = readVarint(buf, pos);
    const field = Number(key >> 3n);
    const wire = Number(key & 7n);
    let value;
    switch (wire) {
      case 0: [value, pos] = readVarint(buf, pos); break;
      case 1: value = buf.subarray(pos, pos + 8); pos += 8; break;
      case 2: {
        let len;
        [len, pos] = readVarint(buf, pos);
        value = buf.subarray(pos, pos + Number(len));
        pos += Number(len);
        break;
      }
      case 5: value = buf.subarray(pos, pos + 4); pos += 4; break;
      default: throw new Error(`protobuf: wire type ${wire} of field ${field}`);
    }
    yield { field, wire, value };
  }
}

// Repeated scalar fields come packed (one length-delimited field) or not.
function varints(f) {
  if (f.wire === 0) return [f.value];
  const out = [];
  for (let pos = 0; pos < f.value.length;) {
    let v;
    [v, pos] = readVarint(f.value, pos);
    out.push(v);
  }
  return out;
}

// fixed reads a 32- or 64-bit field, or a packed run of them.
function fixed(f, size, read) {
  const out = [];
  for (let pos = 0; pos < f.value.length; pos += size) out.push(read.call(f.value, pos));
  return out;
}

const signed64 = (v) => BigInt.asIntN(64, v);

// TensorProto data types used here.
const FLOAT = 1; const INT32 = 6; const INT64 = 7; const STRING = 8; const BOOL = 9; const DOUBLE = 11;

function decodeTensor(buf) {
  const t = {
    name: '', dataType: 0, dims: [], raw: null, floats: [], doubles: [], int32s: [], int64s: [], strings: [],
  };
  for (const f of fields(buf)) {
    switch (f.field) {
      case 1: t.dims.push(...varints(f).map((v) => Number(signed64(v)))); break;
      case 2: t.dataType = Number(f.value); break;
      case 4: t.floats.push(...fixed(f, 4, Buffer.prototype.readFloatLE)); break;
      case 5: t.int32s.push(...varints(f).map((v) => Number(BigInt.asIntN(32, v)))); break;
      case 6: t.strings.push(f.value.toString('utf8')); break;
      case 7: t.int64s.push(...varints(f).map(signed64)); break;
      case 8: t.name = f.value.toString('utf8'); break;
      case 9: t.raw = f.value; break;
      case 10: t.doubles.push(...fixed(f, 8, Buffer.prototype.readDoubleLE)); break;
      default: break;
    }
  }
  const copy = (Type) => {
    const bytes = Uint8Array.from(t.raw);
    return new Type(bytes.buffer, 0, bytes.length / Type.BYTES_PER_ELEMENT);
  };
  let type;
  let data;
  switch (t.dataType) {
    case FLOAT: type = 'float32'; data = t.raw ? copy(Float32Array) : Float32Array.from(t.floats); break;
    case DOUBLE: type = 'float64'; data = t.raw ? copy(Float64Array) : Float64Array.from(t.doubles); break;
    case INT64: type = 'int64'; data = t.raw ? copy(BigInt64Array) : BigInt64Array.from(t.int64s); break;
    case INT32: type = 'int32'; data = t.raw ? copy(Int32Array) : Int32Array.from(t.int32s); break;
    case BOOL: type = 'bool'; data = t.raw ? Uint8Array.from(t.raw) : Uint8Array.from(t.int32s); break;
    case STRING: type = 'string'; data = t.strings; break;
    default: throw new Error(`tensor ${t.name}: data type ${t.dataType} not handled`);
  }
  return { name: t.name, type, dims: t.dims, data };
}

// SequenceProto: tensor_values (3) or map_values (6); MapProto: key_type
// (2), keys (3), string_keys (4), values (5, a SequenceProto).
function decodeSequence(buf) {
  const s = { name: '', tensors: [], maps: [] };
  for (const f of fields(buf)) {
    if (f.field === 1) s.name = f.value.toString('utf8');
    else if (f.field === 3) s.tensors.push(decodeTensor(f.value));
    else if (f.field === 6) s.maps.push(decodeMap(f.value));
  }
  return s;
}

function decodeMap(buf) {
  const m = { keys: [], values: [] };
  for (const f of fields(buf)) {
    if (f.field === 3) m.keys.push(...varints(f).map((v) => String(signed64(v))));
    else if (f.field === 4) m.keys.push(f.value.toString('utf8'));
    else if (f.field === 5) m.values = decodeSequence(f.value).tensors.map((t) => Number(t.data[0]));
  }
  return m;
}

// The op types of a ModelProto's graph (field 7), in node order, once each.
function opTypes(buf) {
  const ops = [];
  for (const f of fields(buf)) {
    if (f.field !== 7) continue;
    for (const g of fields(f.value)) {
      if (g.field !== 1) continue;
      for (const n of fields(g.value)) {
        if (n.field === 4) {
          const op = n.value.toString('utf8');
          if (!ops.includes(op)) ops.push(op);
        }
      }
    }
  }
  return ops;
}

// --------------------------------------------------------------- compare

// compare returns {ok, maxDiff, why} for a fetched tensor against an
// expected one (dims and data).
function compare(name, got, want) {
  if (got.dims.join(',') !== want.dims.join(',')) {
    return { ok: false, maxDiff: NaN, why: `${name}: shape [${got.dims}], want [${want.dims}]` };
  }
  let maxDiff = 0;
  for (let i = 0; i < want.data.length; i++) {
    const g = got.data[i];
    const w = want.data[i];
    if (want.type === 'float32' || want.type === 'float64') {
      if (Number.isNaN(w) || Number.isNaN(g)) {
        if (Number.isNaN(w) === Number.isNaN(g)) continue;
        return { ok: false, maxDiff: NaN, why: `${name}[${i}] = ${g}, want ${w}` };
      }
      const diff = Math.abs(g - w);
      maxDiff = Math.max(maxDiff, diff);
      if (diff > ATOL + RTOL * Math.abs(w)) return { ok: false, maxDiff, why: `${name}[${i}] = ${g}, want ${w}` };
    } else if (g !== w) {
      return { ok: false, maxDiff, why: `${name}[${i}] = ${g}, want ${w}` };
    }
  }
  return { ok: true, maxDiff, why: '' };
}

// The expected maps of a ZipMap output as a [rows, keys] float32 tensor.
function mapsAsTensor(sequence) {
  const keys = sequence.maps[0].keys.join(',');
  for (const m of sequence.maps) {
    if (m.keys.join(',') !== keys) throw new Error(`${sequence.name}: keys ${m.keys} after ${keys}`);
  }
  const columns = sequence.maps[0].keys.length;
  return {
    type: 'float32',
    dims: [sequence.maps.length, columns],
    data: Float32Array.from(sequence.maps.flatMap((m) => m.values)),
  };
}

async function checkModel(dir, probes) {
  const name = path.basename(dir);
  const modelFile = path.join(dir, 'model.onnx');
  const data = path.join(dir, 'test_data_set_0');
  const session = await ort.InferenceSession.create(modelFile);
  const feeds = {};
  session.inputNames.forEach((input, k) => {
    const t = decodeTensor(fs.readFileSync(path.join(data, `input_${k}.pb`)));
    if (t.name !== input) throw new Error(`input_${k}.pb is ${t.name}, graph input ${k} is ${input}`);
    feeds[input] = new ort.Tensor(t.type, t.data, t.dims);
  });
  const tensorOutputs = [];
  const mapOutputs = [];
  session.outputNames.forEach((output, k) => {
    const file = path.join(data, `output_${k}.pb`);
    const bytes = fs.readFileSync(file);
    if (session.outputMetadata[k].isTensor) tensorOutputs.push({ output, want: decodeTensor(bytes) });
    else mapOutputs.push({ output, want: mapsAsTensor(decodeSequence(bytes)) });
  });
  const results = [];
  const got = await session.run(feeds, tensorOutputs.map((o) => o.output));
  for (const { output, want } of tensorOutputs) results.push(compare(output, got[output], want));
  const notes = [];
  if (mapOutputs.length > 0) {
    const probe = await ort.InferenceSession.create(path.join(probes, `${name}.onnx`));
    const extra = probe.outputNames.filter((o) => !session.outputNames.includes(o));
    if (extra.length !== mapOutputs.length) throw new Error(`probe has outputs ${probe.outputNames}`);
    const probed = await probe.run(feeds, extra);
    mapOutputs.forEach(({ output, want }, k) => {
      results.push(compare(`${output} (via ${extra[k]})`, probed[extra[k]], want));
      notes.push(`${output} checked via the probe's ${extra[k]}`);
    });
  }
  const failed = results.find((r) => !r.ok);
  return {
    name,
    ok: !failed,
    maxDiff: Math.max(0, ...results.map((r) => r.maxDiff).filter((d) => !Number.isNaN(d))),
    note: failed ? failed.why : notes.join('; '),
  };
}

async function main() {
  const testdata = process.argv[2] || path.join(root, 'testing', 'mlmodels', 'testdata');
  const probes = process.argv[3] || path.join(root, 'out', 'mlmodels', 'probes');
  const dirs = fs.readdirSync(testdata).map((d) => path.join(testdata, d))
    .filter((d) => fs.existsSync(path.join(d, 'model.onnx'))).sort();
  console.log(`onnxruntime-node ${ort.env.versions.node}; rule |Δ| <= ${ATOL} + ${RTOL}·|expected|, labels exact`);
  console.log('| model | ops | ORT match | max abs diff | note |');
  console.log('|---|---|---|---|---|');
  let failures = 0;
  for (const dir of dirs) {
    const ops = opTypes(fs.readFileSync(path.join(dir, 'model.onnx')));
    let r;
    try {
      r = await checkModel(dir, probes);
    } catch (e) {
      r = { name: path.basename(dir), ok: false, maxDiff: NaN, note: e.message.split('\n')[0] };
    }
    if (!r.ok) failures++;
    const match = r.ok ? 'yes' : 'NO';
    console.log(`| ${r.name} | ${ops.join(', ')} | ${match} | ${r.maxDiff.toExponential(2)} | ${r.note} |`);
  }
  console.log(`${dirs.length - failures} of ${dirs.length} models match`);
  process.exitCode = failures > 0 ? 1 : 0;
}

main();
