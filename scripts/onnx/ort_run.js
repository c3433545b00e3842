#!/usr/bin/env node
// Runs an ONNX model with ONNX Runtime (onnxruntime-node, CPU execution provider) on .npy inputs
// and writes its outputs as .npy: the reference side of scripts/onnx/compare_models.py.
//
//   node scripts/onnx/ort_run.js MODEL.onnx --input NAME=FILE.npy ... [--output NAME=FILE.npy ...]
//        [--threads N] [--bench ITERS] [--profile PREFIX]
//
// Every model input must be given. Without --output, the outputs' names, types and shapes are
// printed and nothing is written. --threads sets intra-op threads (default: ORT's choice);
// inter-op threads are 1 and graph optimizations are all on. --bench ITERS runs 3 warm-ups then
// ITERS timed runs and prints "median_ms=<ms>" (plus min and mean) on a line of its own.
//
// onnxruntime-node is loaded from $WEFT_ORT_DIR/node_modules (default: <repo>/build/ort), where
// scripts/onnx/setup_ort.sh installs it.
//
// .npy support (written here, format versions 1.0/2.0/3.0 read, 1.0 written): little-endian,
// C order, dtypes float32 (<f4), int64 (<i8), int32 (<i4) and bool (|b1). Anything else
// (big-endian, Fortran order, float64, ...) is rejected with an error naming the file.
'use strict';

const fs = require('fs');
const path = require('path');

const USAGE =
    'usage: node ort_run.js MODEL.onnx --input NAME=FILE.npy ... [--output NAME=FILE.npy ...] ' +
    '[--threads N] [--bench ITERS] [--profile PREFIX]';

class UsageError extends Error {}

// ---------------------------------------------------------------------------------------------
// .npy
// ---------------------------------------------------------------------------------------------

// descr -> ORT tensor type, typed-array constructor, element size.
const NPY_TYPES = {
  '<f4': {ort: 'float32', Array: Float32Array, size: 4},
  '<i8': {ort: 'int64', Array: BigInt64Array, size: 8},
  '<i4': {ort: 'int32', Array: Int32Array, size: 4},
  '|b1': {ort: 'bool', Array: Uint8Array, size: 1},
};
const ORT_TO_DESCR = {float32: '<f4', int64: '<i8', int32: '<i4', bool: '|b1'};
const NPY_MAGIC = Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]);  // "\x93NUMPY"

// Parses the header dict, e.g. {'descr': '<f4', 'fortran_order': False, 'shape': (1, 3), }.
function parseNpyHeader(text, file) {
  const bad = (what) => new Error(`${file}: bad .npy header (${what}): ${text.trim()}`);
  const descr = /['"]descr['"]\s*:\s*['"]([^'"]*)['"]/.exec(text);
  const fortran = /['"]fortran_order['"]\s*:\s*(True|False)/.exec(text);
  const shape = /['"]shape['"]\s*:\s*\(([^)]*)\)/.exec(text);
  if (!descr) throw bad('no descr');
  if (!fortran) throw bad('no fortran_order');
  if (!shape) throw bad('no shape');
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s.length > 0).map((s) => {
    if (!/^\d+$/.test(s)) throw bad(`shape entry '${s}'`);
    return Number(s);
  });
  return {descr: descr[1], fortran: fortran[1] === 'True', dims};
}

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.length < 10 || !buf.subarray(0, 6).equals(NPY_MAGIC)) {
    throw new Error(`${file}: not a .npy file (bad magic)`);
  }
  const major = buf[6];
  let headerLen, headerStart;
  if (major === 1) {
    headerLen = buf.readUInt16LE(8);
    headerStart = 10;
  } else if (major === 2 || major === 3) {
    if (buf.length < 12) throw new Error(`${file}: truncated .npy header`);
    headerLen = buf.readUInt32LE(8);
    headerStart = 12;
  } else {
    throw new Error(`${file}: unsupported .npy format version ${major}.${buf[7]}`);
  }
  const dataStart = headerStart + headerLen;
  if (buf.length < dataStart) throw new Error(`${file}: truncated .npy header`);
  const header = parseNpyHeader(buf.toString(major === 3 ? 'utf8' : 'latin1', headerStart, dataStart), file);
  const type = NPY_TYPES[header.descr];
  if (!type) {
    throw new Error(`${file}: unsupported .npy dtype '${header.descr}' ` +
                    `(supported: ${Object.keys(NPY_TYPES).join(', ')}; little-endian only)`);
  }
  const count = header.dims.reduce((a, b) => a * b, 1);
  if (header.fortran && header.dims.filter((d) => d !== 1).length > 1) {
    throw new Error(`${file}: Fortran-order .npy arrays are not supported (save with C order)`);
  }
  const nbytes = count * type.size;
  if (buf.length - dataStart < nbytes) {
    throw new Error(`${file}: truncated .npy data: ${buf.length - dataStart} bytes, ` +
                    `shape [${header.dims}] ${header.descr} needs ${nbytes}`);
  }
  // Copy into a fresh ArrayBuffer: the data offset need not be aligned for the typed array.
  const bytes = new Uint8Array(nbytes);
  buf.copy(bytes, 0, dataStart, dataStart + nbytes);
  return {type: type.ort, dims: header.dims, data: new type.Array(bytes.buffer)};
}

function writeNpy(file, type, dims, data) {
  const descr = ORT_TO_DESCR[type];
  if (!descr) {
    throw new Error(`${file}: cannot write ORT type '${type}' as .npy ` +
                    `(supported: ${Object.keys(ORT_TO_DESCR).join(', ')})`);
  }
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  // Version 1.0: magic(6) + version(2) + length(2) + header, padded with spaces to a multiple
  // of 64 bytes and ended by '\n'.
  const total = Math.ceil((10 + header.length + 1) / 64) * 64;
  header = header + ' '.repeat(total - 10 - header.length - 1) + '\n';
  if (header.length > 0xffff) throw new Error(`${file}: .npy header too long`);
  const pre = Buffer.alloc(10);
  NPY_MAGIC.copy(pre, 0);
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
}

// ---------------------------------------------------------------------------------------------
// Command line
// ---------------------------------------------------------------------------------------------

function parseArgs(argv) {
  const args = {model: null, inputs: [], outputs: [], threads: null, bench: 0, profile: null};
  const nameFile = (flag, v) => {
    if (v === undefined) throw new UsageError(`${flag} expects NAME=FILE.npy`);
    const eq = v.indexOf('=');
    if (eq <= 0 || eq === v.length - 1) throw new UsageError(`${flag} expects NAME=FILE.npy, got '${v}'`);
    return {name: v.slice(0, eq), file: v.slice(eq + 1)};
  };
  const count = (flag, v, min) => {
    if (v === undefined || !/^\d+$/.test(v) || Number(v) < min) {
      throw new UsageError(`${flag} expects an integer >= ${min}, got '${v === undefined ? '' : v}'`);
    }
    return Number(v);
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '-h' || a === '--help') {
      console.log(USAGE);
      process.exit(0);
    } else if (a === '--input' || a === '-i') {
      args.inputs.push(nameFile(a, argv[++i]));
    } else if (a === '--output' || a === '-o') {
      args.outputs.push(nameFile(a, argv[++i]));
    } else if (a === '--threads' || a === '-t') {
      args.threads = count(a, argv[++i], 0);
    } else if (a === '--bench') {
      args.bench = count(a, argv[++i], 1);
    } else if (a === '--profile') {
      if (i + 1 >= argv.length) throw new UsageError('--profile needs a file name prefix');
      args.profile = argv[++i];
    } else if (a.startsWith('-')) {
      throw new UsageError(`unknown option '${a}'`);
    } else if (args.model === null) {
      args.model = a;
    } else {
      throw new UsageError(`unexpected argument '${a}' (one model only)`);
    }
  }
  if (args.model === null) throw new UsageError('no model given');
  return args;
}

function loadOrt() {
  const repo = path.resolve(__dirname, '..', '..');
  const dir = path.resolve(process.env.WEFT_ORT_DIR || path.join(repo, 'build', 'ort'));
  const pkg = path.join(dir, 'node_modules', 'onnxruntime-node');
  if (!fs.existsSync(pkg)) {
    throw new Error(`onnxruntime-node not found in ${dir}/node_modules; run scripts/onnx/setup_ort.sh`);
  }
  return require(pkg);
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const ort = loadOrt();

  const options = {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    interOpNumThreads: 1,
  };
  if (args.threads !== null) options.intraOpNumThreads = args.threads;
  if (args.profile) {
    // ORT's own per-node profile (Chrome trace JSON), to set beside `weft run --profile`.
    options.enableProfiling = true;
    options.profileFilePrefix = args.profile;
  }
  const session = await ort.InferenceSession.create(args.model, options);

  const feeds = {};
  for (const {name, file} of args.inputs) {
    if (!session.inputNames.includes(name)) {
      throw new Error(`model has no input '${name}' (inputs: ${session.inputNames.join(', ')})`);
    }
    if (name in feeds) throw new Error(`input '${name}' given twice`);
    const t = readNpy(file);
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
  }
  const missing = session.inputNames.filter((n) => !(n in feeds));
  if (missing.length) {
    throw new Error(`missing input(s): ${missing.join(', ')}; give each as --input NAME=FILE.npy`);
  }
  for (const {name} of args.outputs) {
    if (!session.outputNames.includes(name)) {
      throw new Error(`model has no output '${name}' (outputs: ${session.outputNames.join(', ')})`);
    }
  }
  const fetches = args.outputs.length ? [...new Set(args.outputs.map((o) => o.name))] : session.outputNames;

  const results = await session.run(feeds, fetches);
  for (const {name, file} of args.outputs) {
    const t = results[name];
    writeNpy(file, t.type, t.dims, t.data);
  }
  if (!args.outputs.length) {
    for (const name of fetches) {
      const t = results[name];
      console.log(`${name}: ${t.type} [${t.dims.join(', ')}]`);
    }
  }

  if (args.bench) {
    for (let i = 0; i < 3; i++) await session.run(feeds, fetches);
    const times = [];
    for (let i = 0; i < args.bench; i++) {
      const t0 = process.hrtime.bigint();
      await session.run(feeds, fetches);
      times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    const mean = times.reduce((a, b) => a + b, 0) / times.length;
    console.log(`median_ms=${median(times).toFixed(3)} min_ms=${Math.min(...times).toFixed(3)} ` +
                `mean_ms=${mean.toFixed(3)} iters=${times.length} threads=${args.threads ?? 'default'}`);
  }
  if (args.profile) session.endProfiling();  // writes PREFIX_<date>.json (ORT names it)
  await session.release();
}

main().catch((e) => {
  if (e instanceof UsageError) {
    console.error(`ort_run.js: ${e.message}\n${USAGE}`);
    process.exit(2);
  }
  console.error(`ort_run.js: ${e && e.message ? e.message : e}`);
  process.exit(1);
});
