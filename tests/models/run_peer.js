// The peer side of the model golden tests (tests/models/test_models.c): runs one model
// in ONNX Runtime (onnxruntime-node, CPU execution provider), in TensorFlow.js
// (@tensorflow/tfjs, pure-JS "cpu" backend), in face-api.js (@vladmandic/face-api on
// that same TensorFlow.js and backend) or in LiteRT.js (@litertjs/core, Google's
// WebAssembly build of the TensorFlow Lite runtime, CPU) on input tensors the C test
// prepared with the facefuse library, and writes every output so the C test can
// compare facefuse's outputs with them by name. Nothing is fetched here: the packages
// come from the cache tests/models/setup-peers filled (NODE_PATH points at its
// node_modules).
//
//   node run_peer.js ort|tfjs|faceapi|tflite MODEL OUTDIR NAME=DTYPE:D0xD1x...:FILE [...]
//
// DTYPE is f32 or f16 (FILE holds raw little-endian elements of that type). MODEL is
// an .onnx file (ort), a TF.js model.json with its weight files beside it (tfjs),
// face-api.js's face_recognition_model-weights_manifest.json with its .bin beside it
// (faceapi: one input, N x 150 x 150 x 3 RGB 0..255; one output, `descriptor`), or a
// .tflite file (tflite: f32 inputs of exactly the file's shapes, batch included, as
// LiteRT.js cannot resize them).
// Writes OUTDIR/outputs.tsv, one line per output in the peer's order:
//   NAME <tab> DTYPE <tab> D0xD1x... <tab> FILE
// where FILE (in OUTDIR) holds the output as raw little-endian f32 whatever the
// model's type (f16 outputs are widened exactly). Exit status 0 on success, 2 for bad
// usage, 1 for any peer error (message on stderr).
// Required as a module (setup-peers does), it only exports loadLiteRt.
'use strict';
const fs = require('fs');
const path = require('path');

function die(code, msg) {
  process.stderr.write('run_peer: ' + msg + '\n');
  process.exit(code);
}

// IEEE half -> double, exact (f16 outputs are widened to f32 without rounding). f16
// inputs arrive as half bits the C test made, so both engines see identical values.
function halfToFloat(h) {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e === 0) return s * m * Math.pow(2, -24);
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * Math.pow(2, e - 15);
}

function parseInput(spec) {
  const eq = spec.indexOf('=');
  if (eq <= 0) die(2, `bad input spec '${spec}' (want NAME=DTYPE:DIMS:FILE)`);
  const name = spec.slice(0, eq);
  const rest = spec.slice(eq + 1).split(':');
  if (rest.length < 3) die(2, `bad input spec '${spec}' (want NAME=DTYPE:DIMS:FILE)`);
  const dtype = rest[0];
  const dims = rest[1] === '' ? [] : rest[1].split('x').map(Number);
  const file = rest.slice(2).join(':');
  if (!['f32', 'f16'].includes(dtype)) die(2, `input '${name}': dtype '${dtype}' is not f32 or f16`);
  if (dims.some((d) => !Number.isInteger(d) || d < 0)) die(2, `input '${name}': bad dims '${rest[1]}'`);
  const buf = fs.readFileSync(file);
  const n = dims.reduce((a, b) => a * b, 1);
  const esize = dtype === 'f32' ? 4 : 2;
  if (buf.length !== n * esize)
    die(1, `input '${name}': ${file} has ${buf.length} bytes, ${dims.join('x')} ${dtype} needs ${n * esize}`);
  const ab = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length);
  const data = dtype === 'f32' ? new Float32Array(ab) : new Uint16Array(ab);
  return { name, dtype, dims, data };
}

function writeOutputs(outdir, outs) {
  fs.mkdirSync(outdir, { recursive: true });
  const lines = [];
  outs.forEach((o, k) => {
    const file = `out${k}.f32`;
    const f = new Float32Array(o.values.length);
    if (o.values instanceof Uint16Array) for (let i = 0; i < f.length; i++) f[i] = halfToFloat(o.values[i]);
    else for (let i = 0; i < f.length; i++) f[i] = Number(o.values[i]);
    fs.writeFileSync(path.join(outdir, file), Buffer.from(f.buffer, f.byteOffset, f.byteLength));
    lines.push(`${o.name}\t${o.dtype}\t${o.dims.join('x')}\t${file}`);
  });
  fs.writeFileSync(path.join(outdir, 'outputs.tsv'), lines.join('\n') + '\n');
}

async function runOrt(model, inputs) {
  const ort = require('onnxruntime-node');
  // One thread and the default optimisation level: the numbers a user of ORT gets.
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    logSeverityLevel: 3,
  });
  const feeds = {};
  for (const x of inputs) feeds[x.name] = new ort.Tensor(x.dtype === 'f32' ? 'float32' : 'float16', x.data, x.dims);
  const res = await session.run(feeds);
  return session.outputNames.map((name) => {
    const t = res[name];
    if (t.type !== 'float32' && t.type !== 'float16') die(1, `output '${name}' is ${t.type}, not float`);
    // float16 data are raw bits (Uint16Array) unless this node has Float16Array
    return { name, dtype: t.type === 'float32' ? 'f32' : 'f16', dims: t.dims.map(Number), values: t.data };
  });
}

// A TF.js IOHandler over model.json and the weight files next to it, so the graph model
// loads from disk in node without tfjs-node and without any fetch.
function tfjsHandler(jsonPath) {
  const j = JSON.parse(fs.readFileSync(jsonPath, 'utf8'));
  const dir = path.dirname(jsonPath);
  const specs = [], bufs = [];
  for (const group of j.weightsManifest || []) {
    for (const p of group.paths) bufs.push(fs.readFileSync(path.join(dir, p)));
    specs.push(...group.weights);
  }
  const all = Buffer.concat(bufs);
  const weightData = all.buffer.slice(all.byteOffset, all.byteOffset + all.length);
  return {
    load: async () => ({
      modelTopology: j.modelTopology,
      format: j.format,
      generatedBy: j.generatedBy,
      convertedBy: j.convertedBy,
      signature: j.signature,
      userDefinedMetadata: j.userDefinedMetadata,
      modelInitializer: j.modelInitializer,
      weightSpecs: specs,
      weightData,
    }),
  };
}

async function runTfjs(model, inputs) {
  const tf = require('@tensorflow/tfjs');
  await tf.setBackend('cpu');
  await tf.ready();
  const g = await tf.loadGraphModel(tfjsHandler(model));
  const feeds = {};
  for (const x of inputs) {
    if (x.dtype !== 'f32') die(1, `TF.js input '${x.name}' must be f32`);
    feeds[x.name] = tf.tensor(x.data, x.dims, 'float32');
  }
  // outputNodes are the names TF.js resolved from the signature (or the sinks); the
  // node part before ':' is what facefuse names the output too (docs/NN_TFJS.md).
  const names = g.outputNodes;
  let res = g.execute(feeds, names);
  if (!Array.isArray(res)) res = [res];
  // With a signature, TF.js names outputs by the signature's keys ("output_mesh"); the
  // tensor each key stands for ("Identity_2:0") is the name facefuse gives the output.
  const sig = g.signature && g.signature.outputs ? g.signature.outputs : {};
  const outs = [];
  for (let k = 0; k < names.length; k++) {
    const t = res[k];
    if (t.dtype !== 'float32') die(1, `TF.js output '${names[k]}' is ${t.dtype}, not float32`);
    const name = sig[names[k]] && sig[names[k]].name ? sig[names[k]].name : names[k];
    outs.push({ name, dtype: 'f32', dims: t.shape, values: t.dataSync() });
  }
  return outs;
}

// dlib's mean colour, which face-api.js's FaceRecognitionNet subtracts (R, G, B).
const FACEAPI_MEAN = [122.782, 117.001, 104.298];

// face-api.js's face recognition net (dlib's ResNet), built by face-api from the weights
// manifest and its .bin. face-api's node-wasm build is the one that loads in node
// without tfjs-node (its esm builds do not import there); it requires
// @tensorflow/tfjs-backend-wasm but runs here on the same pure-JS "cpu" backend as tfjs.
async function runFaceapi(manifest, inputs) {
  const faceapi = require('@vladmandic/face-api/dist/face-api.node-wasm.js');
  await faceapi.tf.setBackend('cpu');
  await faceapi.tf.ready();
  const tf = faceapi.tf;
  if (inputs.length !== 1) die(1, `face-api takes one input, got ${inputs.length}`);
  const x = inputs[0];
  if (x.dtype !== 'f32' || x.dims.length !== 4 || x.dims[1] !== 150 || x.dims[2] !== 150 || x.dims[3] !== 3)
    die(1, `face-api input '${x.name}' must be f32 Nx150x150x3, got ${x.dtype} ${x.dims.join('x')}`);
  const groups = JSON.parse(fs.readFileSync(manifest, 'utf8'));
  if (!Array.isArray(groups)) die(1, `${manifest}: not a weights manifest (a JSON list)`);
  const specs = [], bufs = [];
  for (const g of groups) {
    for (const p of g.paths) bufs.push(fs.readFileSync(path.join(path.dirname(manifest), p)));
    specs.push(...g.weights);
  }
  const all = Buffer.concat(bufs);
  const map = tf.io.decodeWeights(all.buffer.slice(all.byteOffset, all.byteOffset + all.length), specs);
  const net = faceapi.nets.faceRecognitionNet;
  net.loadFromWeightMap(map);
  // @vladmandic/face-api 1.7.15 normalises with (x - mean) / 255, where dlib and the
  // original face-api.js (and so facefuse) use (x - mean) / 256. Feeding it
  // x' = mean + (x - mean) * 255/256 per channel makes it compute the same
  // (x - mean) / 256 facefuse computes from x, up to the rounding of x' to f32 (2^-24
  // relative). Measured on the test's face: without this the descriptors differ by
  // 2.3e-4 (max |descriptor| 0.43; max rel 5.4e-3, over the test's 1e-4), with it by
  // 3.1e-6 (max rel 5.4e-5).
  const d = new Float32Array(x.data.length);
  for (let i = 0; i < d.length; i++) {
    const m = FACEAPI_MEAN[i % 3];
    d[i] = m + (x.data[i] - m) * (255 / 256);
  }
  const t = tf.tensor4d(d, x.dims, 'float32');
  const out = net.forwardInput(await faceapi.toNetInput(t));
  return [{ name: 'descriptor', dtype: 'f32', dims: out.shape, values: out.dataSync() }];
}

// LiteRT.js in node. @litertjs/core 2.5.3 is written for browsers; three things make
// it load here, from node_modules and without any fetch:
// - it is an ES module, and ES module resolution ignores NODE_PATH, so it is imported
//   by the file path require.resolve finds;
// - it loads its runtime (an Emscripten build that supports node) through
//   importScripts(), which node lacks, into self.ModuleFactory. The runtime is a
//   CommonJS file inside a "type": "module" package, so node would read it as an ES
//   module with no exports; it is compiled here as CommonJS instead;
// - given a directory it picks the build: without relaxed SIMD in this node's
//   WebAssembly (node 20) that is litert_wasm_compat_internal.js, single-threaded,
//   which reads its .wasm beside it with fs.
// It warns that it cannot make a WebGPU device (node has no navigator.gpu) and then
// runs on its "wasm" accelerator: the TFLite interpreter with XNNPACK, in WebAssembly.
let liteRtPromise = null;
function loadLiteRt() {
  if (liteRtPromise) return liteRtPromise;
  liteRtPromise = (async () => {
    const url = require('url');
    const Module = require('module');
    const vm = require('vm');
    const main = require.resolve('@litertjs/core');
    const lrt = await import(url.pathToFileURL(main).href);
    globalThis.self = globalThis;
    globalThis.importScripts = (u) => {
      const file = u.startsWith('file:') ? url.fileURLToPath(u) : u;
      const mod = { exports: {} };
      const fn = vm.compileFunction(fs.readFileSync(file, 'utf8'),
        ['exports', 'require', 'module', '__filename', '__dirname'], { filename: file });
      fn(mod.exports, Module.createRequire(file), mod, file, path.dirname(file));
      globalThis.ModuleFactory = mod.exports;
    };
    await lrt.loadLiteRt(path.join(path.dirname(main), '..', 'wasm'));
    return lrt;
  })();
  return liteRtPromise;
}

async function runTflite(model, inputs) {
  const lrt = await loadLiteRt();
  const m = await lrt.loadAndCompile(new Uint8Array(fs.readFileSync(model)), {
    accelerator: 'wasm',
    cpuOptions: { numThreads: 1 },
  });
  const feeds = [];
  for (const d of m.getInputDetails()) {
    const x = inputs.find((i) => i.name === d.name);
    if (!x) die(1, `no input given for the model's '${d.name}'`);
    const want = Array.from(d.shape);
    if (x.dtype !== 'f32' || d.dtype !== 'float32')
      die(1, `input '${d.name}': the model wants ${d.dtype}, given ${x.dtype} (f32 only)`);
    if (want.join('x') !== x.dims.join('x'))
      die(1, `input '${d.name}': the model wants ${want.join('x')}, given ${x.dims.join('x')}`);
    feeds.push(new lrt.Tensor(x.data, want));
  }
  const res = await m.run(feeds);
  return m.getOutputDetails().map((d, k) => {
    const t = res[k];
    if (t.type.dtype !== 'float32') die(1, `output '${d.name}' is ${t.type.dtype}, not float32`);
    return { name: d.name, dtype: 'f32', dims: Array.from(t.type.layout.dimensions), values: t.toTypedArray() };
  });
}

async function main() {
  const a = process.argv.slice(2);
  if (a.length < 4 || !['ort', 'tfjs', 'faceapi', 'tflite'].includes(a[0]))
    die(2, 'usage: node run_peer.js ort|tfjs|faceapi|tflite MODEL OUTDIR NAME=DTYPE:DIMS:FILE [...]');
  const [peer, model, outdir] = a;
  const inputs = a.slice(3).map(parseInput);
  const run = { ort: runOrt, tfjs: runTfjs, faceapi: runFaceapi, tflite: runTflite }[peer];
  const outs = await run(model, inputs);
  writeOutputs(outdir, outs);
}

module.exports = { loadLiteRt };
if (require.main === module) main().catch((e) => die(1, (e && e.stack) || String(e)));
