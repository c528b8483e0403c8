#!/usr/bin/env python3
"""Peers of bench/gpu/bench_gpu.c (issue #7, item 7): the same ONNX files, batch sizes and
1080p detector inputs on the lent GPU machine through

  torch  our own small ONNX -> PyTorch interpreter: the graph is read with the `onnx`
         package and each node run with torch / torch.nn.functional (only the ops these
         face models use), fp16 weights and activations on CUDA, channels-last, cuDNN
         autotuning, and a captured CUDA graph per shape (as the facefuse engine does),
         so the number is PyTorch's kernels, not Python's per-node overhead;
  ort    ONNX Runtime's CUDAExecutionProvider when this onnxruntime has it (fp16 model
         made with onnxruntime.transformers.float16 where that module exists, else fp32),
         inputs and outputs bound to device memory.

Each is checked against ONNX Runtime's CPU provider (fp32) on the same input: the line
"check" gives the worst cosine and the relative L2 error, so a wrong peer is visible.

  peer_torch.py --embed-model M --det-model D [--det-full-model F] [--iters N]
                [--warmup N] [--embed-batches 1,64,...] [--det-batches 1,8,32]
  peer_torch.py --dry-run MODEL...   (no torch needed: lists the ops, says which the
                interpreter lacks, and checks the batch rewrite made for ONNX Runtime)

Prints one markdown table at the end (the same columns as bench_gpu). Not a test.
"""
import argparse
import collections
import statistics
import sys
import time

import numpy as np
import onnx
from onnx import helper, numpy_helper

OPS = {"Add", "Clip", "Concat", "Constant", "Conv", "Gather", "LeakyRelu", "MaxPool",
       "Relu", "Reshape", "Resize", "Shape", "Sigmoid", "Slice", "Softmax", "Transpose",
       "Unsqueeze", "Cast", "Mul", "Sub", "Div", "Flatten", "PRelu", "BatchNormalization",
       "GlobalAveragePool", "Gemm", "MatMul", "Squeeze", "Identity", "Pad", "AveragePool"}


def attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def batched_model(path):
    """The model with a free batch dimension, for ONNX Runtime: dim 0 of the inputs and
    outputs becomes 'N', Reshape shapes that bake in a batch of 1 get 0 ("copy dim 0 of
    the input") in its place, and stale intermediate shapes are dropped."""
    m = onnx.load(path)
    inits = {t.name: t for t in m.graph.initializer}
    consts = {n.output[0]: n for n in m.graph.node if n.op_type == "Constant"}
    for vi in list(m.graph.input) + list(m.graph.output):
        if vi.name in inits:
            continue
        dims = vi.type.tensor_type.shape.dim
        if dims:
            dims[0].ClearField("dim_value")
            dims[0].dim_param = "N"
    done = {}  # shape tensor -> its batched copy (several Reshapes may share one)
    for n in m.graph.node:
        if n.op_type != "Reshape" or len(n.input) < 2:
            continue
        if n.input[1] in done:
            n.input[1] = done[n.input[1]]
            continue
        src = inits.get(n.input[1])
        arr = numpy_helper.to_array(src) if src is not None else None
        if arr is None and n.input[1] in consts:
            c = consts[n.input[1]]
            arr = numpy_helper.to_array(attrs(c)["value"])
        if arr is not None and arr.ndim == 1 and arr.size >= 2 and arr[0] == 1:
            arr = arr.copy()
            arr[0] = 0
            new = numpy_helper.from_array(arr.astype(np.int64), n.input[1] + "_batched")
            m.graph.initializer.append(new)
            done[n.input[1]] = new.name
            n.input[1] = new.name
    del m.graph.value_info[:]
    return m


def dry_run(paths):
    bad = 0
    for p in paths:
        m = onnx.load(p)
        ops = collections.Counter(n.op_type for n in m.graph.node)
        missing = sorted(set(ops) - OPS)
        print("%s: %s" % (p, ", ".join("%s x%d" % kv for kv in sorted(ops.items()))))
        print("  interpreter lacks: %s" % (", ".join(missing) or "nothing"))
        b = batched_model(p)
        onnx.checker.check_model(b)
        ins = [[d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim]
               for i in b.graph.input if i.name not in {t.name for t in b.graph.initializer}]
        print("  batched for ONNX Runtime: inputs %s, checker ok" % ins)
        bad |= bool(missing)
    return 1 if bad else 0


class TorchGraph:
    """An ONNX graph run node by node with torch. Float tensors live on the device in
    `dtype`; integer values (shapes, indices, axes) stay numpy arrays on the host, so
    shape arithmetic costs nothing on the GPU and is fixed once a CUDA graph is
    captured."""

    def __init__(self, path, torch, device, dtype):
        self.t, self.F = torch, torch.nn.functional
        self.dev, self.dtype = device, dtype
        m = onnx.load(path)
        self.nodes = list(m.graph.node)
        missing = sorted({n.op_type for n in self.nodes} - OPS)
        if missing:
            raise RuntimeError("interpreter lacks %s" % ", ".join(missing))
        self.consts = {}
        self.uploads = {}
        # Constant nodes: converted once, not on every run (see _upload)
        self.host = {}  # constants as numpy too: read on the host, no device sync
        self.node_consts = {}
        for n in self.nodes:
            if n.op_type == "Constant":
                self.host[n.output[0]] = numpy_helper.to_array(attrs(n)["value"])
                self.node_consts[id(n)] = self._const(self.host[n.output[0]])
        for t in m.graph.initializer:
            self.host[t.name] = numpy_helper.to_array(t)
            self.consts[t.name] = self._const(self.host[t.name])
        self.input = [i.name for i in m.graph.input if i.name not in self.consts][0]
        self.outputs = [o.name for o in m.graph.output]

    def _const(self, a):
        if a.dtype.kind == "f":
            x = self.t.from_numpy(np.ascontiguousarray(a)).to(self.dev, self.dtype)
            return x.contiguous(memory_format=self.t.channels_last) if x.dim() == 4 else x
        return a

    def _tensor(self, v, like):
        if isinstance(v, np.ndarray):
            return self._upload(v, like.dtype)
        return v

    def _upload(self, a, dtype=None):
        """A host array on the device, uploaded once: a captured CUDA graph may not copy
        from pageable host memory, and the warm-up runs fill this cache."""
        key = (a.dtype.str, a.shape, a.tobytes(), dtype)
        y = self.uploads.get(key)
        if y is None:
            y = self.t.as_tensor(a, device=self.dev, dtype=dtype)
            self.uploads[key] = y
        return y

    def run(self, x):
        t, F = self.t, self.F
        env = dict(self.consts)
        env[self.input] = x
        for n in self.nodes:
            a = attrs(n)
            i = [env[k] if k else None for k in n.input]
            op = n.op_type
            if op == "Constant":
                y = self.node_consts[id(n)]
            elif op == "Conv":
                w, b = i[1], i[2] if len(i) > 2 else None
                p = a.get("pads", [0, 0, 0, 0])
                xin = i[0]
                if p[0] != p[2] or p[1] != p[3]:
                    xin = F.pad(xin, (p[1], p[3], p[0], p[2]))
                    p = [0, 0, 0, 0]
                y = F.conv2d(xin, w, b, a.get("strides", [1, 1]), (p[0], p[1]),
                             a.get("dilations", [1, 1]), a.get("group", 1))
            elif op == "Relu":
                y = F.relu(i[0])
            elif op == "LeakyRelu":
                y = F.leaky_relu(i[0], a.get("alpha", 0.01))
            elif op == "Sigmoid":
                y = t.sigmoid(i[0])
            elif op == "PRelu":
                y = F.prelu(i[0], i[1].reshape(-1))
            elif op == "Clip":
                lo = i[1] if len(i) > 1 and i[1] is not None else a.get("min")
                hi = i[2] if len(i) > 2 and i[2] is not None else a.get("max")
                # bounds from initializers are read from their host copies: .item() on a
                # device tensor would wait for the device inside a graph capture
                if len(i) > 1 and n.input[1] in self.host:
                    lo = self.host[n.input[1]]
                if len(i) > 2 and n.input[2] in self.host:
                    hi = self.host[n.input[2]]
                lo = float(np.asarray(lo).reshape(-1)[0]) if lo is not None else None
                hi = float(np.asarray(hi).reshape(-1)[0]) if hi is not None else None
                y = t.clamp(i[0], lo, hi)
            elif op in ("Add", "Mul", "Sub", "Div"):
                x0, x1 = i
                if isinstance(x0, np.ndarray) and isinstance(x1, np.ndarray):
                    y = {"Add": np.add, "Mul": np.multiply, "Sub": np.subtract,
                         "Div": np.divide}[op](x0, x1)
                else:
                    like = x0 if not isinstance(x0, np.ndarray) else x1
                    x0, x1 = self._tensor(x0, like), self._tensor(x1, like)
                    y = {"Add": t.add, "Mul": t.mul, "Sub": t.sub, "Div": t.div}[op](x0, x1)
            elif op == "MaxPool" or op == "AveragePool":
                p = a.get("pads", [0, 0, 0, 0])
                fn = F.max_pool2d if op == "MaxPool" else F.avg_pool2d
                y = fn(i[0], a["kernel_shape"], a.get("strides", a["kernel_shape"]),
                       (p[0], p[1]), ceil_mode=bool(a.get("ceil_mode", 0)))
            elif op == "GlobalAveragePool":
                y = F.adaptive_avg_pool2d(i[0], 1)
            elif op == "BatchNormalization":
                y = F.batch_norm(i[0], i[3], i[4], i[1], i[2], False, 0.0, a.get("epsilon", 1e-5))
            elif op == "Resize":
                mode = a.get("mode", b"nearest").decode()
                sizes = i[3] if len(i) > 3 and i[3] is not None and i[3].size else None
                scales = i[2] if len(i) > 2 and i[2] is not None and np.size(i[2]) else None
                kw = {"mode": "nearest" if mode == "nearest" else "bilinear"}
                if mode != "nearest":
                    kw["align_corners"] = a.get("coordinate_transformation_mode") == b"align_corners"
                if sizes is not None:
                    y = F.interpolate(i[0], size=[int(s) for s in sizes[2:]], **kw)
                else:
                    sc = self.host.get(n.input[2], scales)
                    y = F.interpolate(i[0], scale_factor=[float(s) for s in sc[2:]], **kw)
            elif op == "Transpose":
                y = i[0].permute(*a["perm"]) if not isinstance(i[0], np.ndarray) \
                    else np.transpose(i[0], a["perm"])
            elif op == "Reshape":
                shape = [int(s) for s in i[1]]
                x0 = i[0]
                for k, s in enumerate(shape):
                    if s == 0:
                        shape[k] = x0.shape[k]
                # models exported with a batch of 1 baked into the shape: keep the batch
                if shape[0] == 1 and x0.shape[0] != 1:
                    shape[0] = x0.shape[0]
                y = x0.reshape(shape)
            elif op == "Flatten":
                ax = a.get("axis", 1)
                y = i[0].reshape(int(np.prod(i[0].shape[:ax])), -1)
            elif op == "Shape":
                y = np.array(i[0].shape, dtype=np.int64)
            elif op == "Gather":
                idx, ax = i[1], a.get("axis", 0)
                if isinstance(i[0], np.ndarray):
                    y = np.asarray(np.take(i[0], idx, axis=ax))  # a scalar index: 0-d
                else:
                    y = t.index_select(i[0], ax, self._upload(np.ravel(idx)))
                    if np.ndim(idx) == 0:
                        y = y.squeeze(ax)
            elif op == "Unsqueeze":
                axes = a.get("axes") if "axes" in a else [int(v) for v in i[1]]
                y = i[0]
                for ax in sorted(axes):
                    y = np.expand_dims(y, ax) if isinstance(y, np.ndarray) else y.unsqueeze(ax)
            elif op == "Squeeze":
                axes = a.get("axes") if "axes" in a else [int(v) for v in i[1]]
                y = i[0]
                for ax in sorted(axes, reverse=True):
                    y = np.squeeze(y, ax) if isinstance(y, np.ndarray) else y.squeeze(ax)
            elif op == "Concat":
                if all(isinstance(v, np.ndarray) for v in i):
                    y = np.concatenate([np.atleast_1d(v) for v in i], axis=a["axis"])
                else:
                    like = next(v for v in i if not isinstance(v, np.ndarray))
                    y = t.cat([self._tensor(v, like) for v in i], dim=a["axis"])
            elif op == "Slice":
                starts = i[1] if len(i) > 1 else a["starts"]
                ends = i[2] if len(i) > 2 else a["ends"]
                axes = i[3] if len(i) > 3 and i[3] is not None else range(len(starts))
                steps = i[4] if len(i) > 4 and i[4] is not None else [1] * len(starts)
                sl = [slice(None)] * len(i[0].shape)
                for s, e, ax, st in zip(starts, ends, axes, steps):
                    n_ = i[0].shape[int(ax)]
                    sl[int(ax)] = slice(int(max(min(s, n_), -n_)), int(max(min(e, n_), -n_ - 1)), int(st))
                y = i[0][tuple(sl)]
            elif op == "Cast":
                y = i[0].astype(helper.tensor_dtype_to_np_dtype(a["to"])) \
                    if isinstance(i[0], np.ndarray) else i[0]
            elif op == "Softmax":
                y = t.softmax(i[0], dim=a.get("axis", -1))
            elif op == "Gemm":
                w = i[1].t() if a.get("transB", 0) else i[1]
                xa = i[0].t() if a.get("transA", 0) else i[0]
                y = a.get("alpha", 1.0) * (xa @ w)
                if len(i) > 2 and i[2] is not None:
                    y = y + a.get("beta", 1.0) * i[2]
            elif op == "MatMul":
                y = i[0] @ self._tensor(i[1], i[0])
            elif op == "Identity":
                y = i[0]
            elif op == "Pad":
                pads = [int(v) for v in (i[1] if len(i) > 1 else a["pads"])]
                r = len(pads) // 2
                tp = []
                for k in reversed(range(r)):
                    tp += [pads[k], pads[k + r]]
                y = F.pad(i[0], tp, mode=a.get("mode", b"constant").decode())
            else:
                raise RuntimeError("op %s" % op)
            env[n.output[0]] = y
        return [env[o] for o in self.outputs]


def median_ms(fn, warmup, iters, torch):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(iters):
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1))
    times.sort()
    return statistics.median(times), times[max(0, int(np.ceil(0.9 * len(times))) - 1)]


def cos_check(got, ref):
    got = [np.asarray(g, dtype=np.float64).reshape(g.shape[0], -1) for g in got]
    ref = [np.asarray(r, dtype=np.float64).reshape(r.shape[0], -1) for r in ref]
    g, r = np.concatenate(got, axis=1), np.concatenate(ref, axis=1)
    if not np.all(np.isfinite(g)):
        return "NON-FINITE output"
    cos = (g * r).sum(1) / np.maximum(np.linalg.norm(g, axis=1) * np.linalg.norm(r, axis=1), 1e-30)
    rel = np.linalg.norm(g - r) / max(np.linalg.norm(r), 1e-30)
    return "vs ORT cpu fp32: min cos %.5f, rel L2 %.2e" % (cos.min(), rel)


class Bench:
    def __init__(self, args, torch):
        self.a, self.t = args, torch
        self.rows = []
        self.ort = None
        try:
            import onnxruntime as ort
            self.ort = ort
            print("onnxruntime %s, providers %s" % (ort.__version__, ort.get_available_providers()))
            if "CUDAExecutionProvider" not in ort.get_available_providers():
                print("peer ort: CUDAExecutionProvider not available in this onnxruntime")
        except ImportError:
            print("peer ort: onnxruntime not available")

    def row(self, peer, what, model, batch, med, p90, items, unit, note=""):
        rate = items * 1e3 / med
        self.rows.append((peer, what, model.split("/")[-1], batch, med, p90, rate, unit, note))
        print("row %s %s model=%s batch=%d median_ms=%.4f p90_ms=%.4f per_s=%.1f unit=%s %s"
              % (peer, what, model.split("/")[-1], batch, med, p90, rate, unit, note), flush=True)

    def ort_ref(self, path, x):
        """ONNX Runtime CPU fp32 on x (numpy f32): the reference of both peers."""
        if self.ort is None:
            return None
        s = self.ort.InferenceSession(batched_model(path).SerializeToString(),
                                      providers=["CPUExecutionProvider"])
        return s.run(None, {s.get_inputs()[0].name: x})

    def torch_model(self, what, path, shape, batches, prep=None):
        t = self.t
        g16 = TorchGraph(path, t, "cuda", t.float16)
        x_small = np.random.default_rng(1).uniform(-1, 1, (2,) + shape).astype(np.float32)
        if what.startswith("det"):
            x_small *= 100
        ref = self.ort_ref(path, x_small)
        with t.no_grad():
            got = g16.run(t.from_numpy(x_small).to("cuda", t.float16)
                          .contiguous(memory_format=t.channels_last))
        note = cos_check([o.float().cpu().numpy() for o in got], ref) if ref else "no check"
        for B in batches:
            # inputs drawn on the host: the device generator cannot be used after a
            # failed capture ("offset increment outside graph capture")
            x = t.empty((B,) + shape, dtype=t.float32).uniform_(-1, 1) \
                .to("cuda", t.float16).contiguous(memory_format=t.channels_last)
            frames = None
            if prep:
                frames = t.randint(0, 256, (B, 1080, 1920, 3), dtype=t.uint8).to("cuda")
            try:
                with t.no_grad():
                    step = (lambda: g16.run(prep(frames, x))) if prep else (lambda: g16.run(x))
                    # cuDNN autotuning and the libraries' per-stream set-up before the
                    # capture, on a side stream as PyTorch's CUDA graph notes advise
                    side = t.cuda.Stream()
                    side.wait_stream(t.cuda.current_stream())
                    with t.cuda.stream(side):
                        for _ in range(3):
                            step()
                    t.cuda.current_stream().wait_stream(side)
                    t.cuda.synchronize()
                    how, fn = "graph", step
                    try:
                        graph = t.cuda.CUDAGraph()
                        with t.cuda.graph(graph):
                            step()
                        fn = graph.replay
                    except Exception as e:  # noqa: BLE001 - time it eagerly instead
                        how = "eager"
                        note = ("capture failed: %s; " % str(e).split(".")[0]) + note
                        t.cuda.synchronize()
                    med, p90 = median_ms(fn, self.a.warmup, self.a.iters, t)
                self.row("torch", what + " fp16 " + how, path, B, med, p90, B,
                         "frames/s" if what.startswith("det") else "faces/s", note)
            except Exception as e:  # noqa: BLE001 - one failed size should not end the run
                print("peer torch %s batch %d FAILED: %s" % (what, B, e), flush=True)
            note = ""

    def ort_model(self, what, path, shape, batches):
        if self.ort is None or "CUDAExecutionProvider" not in self.ort.get_available_providers():
            return
        t, ort = self.t, self.ort
        m = batched_model(path)
        kind = "fp32"
        try:
            from onnxruntime.transformers import float16
            m = float16.convert_float_to_float16(m, keep_io_types=True)
            kind = "fp16"
        except Exception as e:  # noqa: BLE001
            print("peer ort: fp16 conversion unavailable (%s): fp32" % e)
        prov = [("CUDAExecutionProvider", {"device_id": 0}), "CPUExecutionProvider"]
        try:
            s = ort.InferenceSession(m.SerializeToString(), providers=prov)
        except Exception as e:  # noqa: BLE001 - the fp16 rewrite can fail on some graphs
            if kind == "fp32":
                print("peer ort %s FAILED: %s" % (what, e))
                return
            print("peer ort %s: fp16 model refused (%s): fp32" % (what, e))
            kind = "fp32"
            s = ort.InferenceSession(batched_model(path).SerializeToString(), providers=prov)
        x_small = np.random.default_rng(1).uniform(-1, 1, (2,) + shape).astype(np.float32)
        if what.startswith("det"):
            x_small *= 100
        ref = self.ort_ref(path, x_small)
        note = cos_check(s.run(None, {s.get_inputs()[0].name: x_small}), ref) if ref else ""
        for B in batches:
            x = t.empty((B,) + shape, device="cuda", dtype=t.float32).uniform_(-1, 1)
            io = s.io_binding()
            io.bind_input(s.get_inputs()[0].name, "cuda", 0, np.float32, list(x.shape),
                          x.data_ptr())
            for o in s.get_outputs():
                io.bind_output(o.name, "cuda", 0)
            try:
                def step():
                    s.run_with_iobinding(io)
                med, p90 = median_ms(step, self.a.warmup, self.a.iters, t)
                self.row("ort", what + " " + kind, path, B, med, p90, B,
                         "frames/s" if what.startswith("det") else "faces/s", note)
            except Exception as e:  # noqa: BLE001
                print("peer ort %s batch %d FAILED: %s" % (what, B, e), flush=True)
            note = ""

    def letterbox(self, tw, th):
        """The detector's pre-processing on the GPU: 1080p uint8 BGR frames letterboxed
        into the fp16 input (as bench_gpu's det rows do with warp_to_tensor)."""
        t, F = self.t, self.t.nn.functional
        s = min(tw / 1920, th / 1080)
        w, h = round(1920 * s), round(1080 * s)
        px, py = (tw - w) // 2, (th - h) // 2

        def prep(frames, x):
            f = frames.permute(0, 3, 1, 2).to(t.float16)
            f = F.interpolate(f, size=(h, w), mode="bilinear", align_corners=False)
            x.zero_()
            x[:, :, py:py + h, px:px + w] = f
            return x
        return prep


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--embed-model")
    p.add_argument("--det-model")
    p.add_argument("--det-full-model")
    p.add_argument("--embed-batches", default="1,64,256,1024,4096")
    p.add_argument("--det-batches", default="1,8,32")
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--dry-run", nargs="+", metavar="MODEL")
    a = p.parse_args()
    if a.dry_run:
        return dry_run(a.dry_run)
    try:
        import torch
    except ImportError:
        print("peer torch: PyTorch not available here")
        return 77
    if not torch.cuda.is_available():
        print("peer torch: no CUDA device")
        return 77
    torch.backends.cudnn.benchmark = True
    print("torch %s, CUDA %s, cuDNN %s, %s" % (torch.__version__, torch.version.cuda,
                                              torch.backends.cudnn.version(),
                                              torch.cuda.get_device_name(0)))
    b = Bench(a, torch)
    eb = [int(v) for v in a.embed_batches.split(",")]
    db = [int(v) for v in a.det_batches.split(",")]
    if a.embed_model:
        b.torch_model("embed", a.embed_model, (3, 112, 112), eb)
        b.ort_model("embed", a.embed_model, (3, 112, 112), eb)
    if a.det_model:
        b.torch_model("det", a.det_model, (3, 640, 640), db, b.letterbox(640, 640))
        b.ort_model("det", a.det_model, (3, 640, 640), db)
    if a.det_full_model:
        b.torch_model("det-full", a.det_full_model, (3, 1088, 1920), [1])
        b.ort_model("det-full", a.det_full_model, (3, 1088, 1920), [1])
    print("\n| peer | what | model | batch | median ms/run | p90 ms/run | rate | note |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | --- |")
    for r in b.rows:
        print("| %s | %s | %s | %d | %.3f | %.3f | %.0f %s | %s |" % r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
