#!/usr/bin/python3
# Face swap benchmark, OpenCV side (Debian python3-opencv, run with /usr/bin/python3), and
# the helper that turns the runs' outputs into the tables of docs/BENCHMARKS.md.
#
#   peer_opencv.py swap [--threads N] [--frames N] SOURCE POINTS VIDEO OUT.mp4
#   peer_opencv.py table RUNS_DIR PEER_FRAMES
#
# `swap` is the classic OpenCV face swap, written here from the well-known method and
# fed the geometry facefuse used: POINTS (written by bench_swap --dump) holds the source
# photo's 468 FaceMesh points and each frame's target points after smoothing. Per frame:
#   decode       cv2.VideoCapture.read (FFmpeg)
#   triangulate  Delaunay triangles of the target points (cv2.Subdiv2D), mapped back to
#                point indices so that the same triangles index the source points
#   warp         per triangle: boundingRect of both triangles, getAffineTransform,
#                warpAffine of the source box (INTER_LINEAR, BORDER_REFLECT_101), a
#                fillConvexPoly mask, masked copy into the frame-sized warped image
#                (the u8-mask variant, cheaper than blending through a float mask)
#   clone        convex hull of the target points -> mask; cv2.seamlessClone
#                (NORMAL_CLONE) of the warped image into the frame at the hull's centre
#   encode       cv2.VideoWriter, fourcc mp4v (MPEG-4 part 2: Debian's OpenCV writes it
#                without extra options; cheaper per frame than x264)
# No colour step of its own: the Poisson clone takes the target's colours at the hull.
# Prints the same "stage NAME median mean" lines as bench_swap (no CPU columns), then
# frames, loop_s, loop_cpu_s (process CPU: all threads) and fps.
import glob
import json
import os
import re
import sys
import time

import cv2
import numpy as np


def read_points(path):
    """Source points and the per-frame list of target point arrays (one face or none)."""
    src, frames, size = None, [], None
    with open(path) as f:
        lines = iter(f.read().split("\n"))
    for line in lines:
        if line.startswith("source"):
            src = np.array(next(lines).split(), np.float32).reshape(-1, 2)
        elif line.startswith("video"):
            size = tuple(int(v) for v in line.split()[1:3])
        elif line.startswith("frame"):
            n = int(line.split()[2])
            faces = [np.array(next(lines).split(), np.float32).reshape(-1, 2) for _ in range(n)]
            frames.append(faces[0] if faces else None)
    return src, frames, size


def triangles(pts, w, h):
    """Delaunay triangles of pts as index triples (points outside the frame clipped)."""
    p = np.clip(pts, 0, [w - 1, h - 1]).astype(np.float32)
    sub = cv2.Subdiv2D((0, 0, w, h))
    index = {}
    for i, (x, y) in enumerate(p):
        index.setdefault((float(x), float(y)), i)
        sub.insert((float(x), float(y)))
    out = []
    for t in sub.getTriangleList():
        ids = [index.get((float(t[2 * k]), float(t[2 * k + 1]))) for k in range(3)]
        if None not in ids:
            out.append(ids)
    return out


def warp_triangle(src, dst, t1, t2):
    """The source triangle t1 of src, warped affinely onto t2 in dst (u8 mask copy)."""
    r1 = cv2.boundingRect(t1)
    r2 = cv2.boundingRect(t2)
    if r2[2] <= 0 or r2[3] <= 0 or r1[2] <= 0 or r1[3] <= 0:
        return
    x2, y2, w2, h2 = r2
    H, W = dst.shape[:2]
    if x2 < 0 or y2 < 0 or x2 + w2 > W or y2 + h2 > H:
        return
    a = (t1 - np.float32(r1[:2])).astype(np.float32)
    b = (t2 - np.float32(r2[:2])).astype(np.float32)
    patch = src[r1[1]:r1[1] + r1[3], r1[0]:r1[0] + r1[2]]
    m = cv2.getAffineTransform(a, b)
    warped = cv2.warpAffine(patch, m, (w2, h2), flags=cv2.INTER_LINEAR,
                            borderMode=cv2.BORDER_REFLECT_101)
    mask = np.zeros((h2, w2), np.uint8)
    cv2.fillConvexPoly(mask, np.int32(np.round(b)), 255)
    cv2.copyTo(warped, mask, dst[y2:y2 + h2, x2:x2 + w2])


def swap(argv):
    threads, max_frames = None, 0
    while argv and argv[0] in ("--threads", "--frames") and len(argv) >= 2:
        if argv[0] == "--threads":
            threads = int(argv[1])
        else:
            max_frames = int(argv[1])
        argv = argv[2:]
    if len(argv) != 4:
        sys.exit("usage: peer_opencv.py swap [--threads N] [--frames N] SOURCE POINTS VIDEO "
                 "OUT.mp4")
    source, points, video, out = argv
    if threads is not None:
        cv2.setNumThreads(threads)
    src_img = cv2.imread(source, cv2.IMREAD_COLOR)
    if src_img is None:
        sys.exit(f"peer_opencv: cannot read {source}")
    src_pts, frames, _ = read_points(points)
    if max_frames > 0:
        frames = frames[:max_frames]
    cap = cv2.VideoCapture(video)
    if not cap.isOpened():
        sys.exit(f"peer_opencv: cannot open {video}")
    w, h = int(cap.get(cv2.CAP_PROP_FRAME_WIDTH)), int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT))
    fps = cap.get(cv2.CAP_PROP_FPS) or 25.0
    wr = cv2.VideoWriter(out, cv2.VideoWriter_fourcc(*"mp4v"), fps, (w, h))
    if not wr.isOpened():
        sys.exit(f"peer_opencv: cannot write {out}")
    names = ["decode", "triangulate", "warp", "clone", "apply", "encode", "total"]
    t = {k: [] for k in names}
    n = 0
    c0, w0 = time.process_time(), time.perf_counter()
    while n < len(frames):
        a = time.perf_counter()
        ok, frame = cap.read()
        if not ok:
            break
        b = time.perf_counter()
        tp = frames[n]
        c = d = b
        if tp is not None:
            tris = triangles(tp, w, h)
            c = time.perf_counter()
            warped = frame.copy()
            for i, j, k in tris:
                warp_triangle(src_img, warped, src_pts[[i, j, k]], tp[[i, j, k]])
            d = time.perf_counter()
            hull = cv2.convexHull(np.int32(np.round(np.clip(tp, 0, [w - 1, h - 1]))))
            mask = np.zeros((h, w), np.uint8)
            cv2.fillConvexPoly(mask, hull, 255)
            x, y, bw, bh = cv2.boundingRect(hull)
            frame = cv2.seamlessClone(warped, frame, mask, (x + bw // 2, y + bh // 2),
                                      cv2.NORMAL_CLONE)
        e = time.perf_counter()
        wr.write(frame)
        f = time.perf_counter()
        for k, v in zip(names, [b - a, c - b, d - c, e - d, e - b, f - e, f - a]):
            t[k].append(v * 1e3)
        n += 1
    wr.release()
    cap.release()
    loop_s, loop_cpu = time.perf_counter() - w0, time.process_time() - c0
    print("per_frame_apply " + " ".join(f"{v:.3f}" for v in t["apply"]))
    for k in names:
        v = np.array(t[k])
        print(f"stage {k} {np.median(v):.3f} {v.mean():.3f} -1 -1")
    print(f"frames {n}\nloop_s {loop_s:.3f}\nloop_cpu_s {loop_cpu:.3f}\nfps {n / loop_s:.2f}")


# ---- the tables ------------------------------------------------------------------------

FF_CONFIGS = [
    ("ff_default", "2 workers, veryfast, feather (defaults)"),
    ("ff_ultrafast", "--preset ultrafast"),
    ("ff_poisson", "--blend poisson"),
    ("ff_threads1", "--threads 1 (one worker, models on 2 threads)"),
    ("ff_1core", "--threads 1 --model-threads 1, pinned to one core"),
]
STAGES = ["decode", "detect", "landmarks", "select", "smooth", "warp", "mask", "colour",
          "blend", "apply", "encode", "total"]


def parse_run(base):
    """One run's files: the load before it, /usr/bin/time, and what it printed."""
    r = {"load": float(open(base + ".load").read().split()[0])}
    e, u, s = (float(v) for v in open(base + ".time").read().split()[-3:])
    r.update(wall=e, cpu=u + s)
    if os.path.exists(base + ".busy"):
        b0, b1, tck = (float(v) for v in open(base + ".busy").read().split())
        r["others"] = max(0.0, ((b1 - b0) / tck - r["cpu"]) / e) if e > 0 else 0.0
    txt = open(base + ".out").read()
    if txt.lstrip().startswith("{"):  # facefuse swap --json
        j = json.loads(txt)
        r.update(fps=j["fps"], seconds=j["seconds"], frames=j["frames"])
        m = re.search(r"swap video: .*", open(base + ".err").read())
        if m:
            for k, v in re.findall(r"(decode|smooth|encode|detect|landmarks|select|warp|"
                                   r"mask|colour|blend) ([0-9.]+)", m.group(0)):
                r["v_" + k] = float(v) / j["frames"]
        return r
    for line in txt.split("\n"):
        f = line.split()
        if not f:
            continue
        if f[0] == "stage":
            r["med_" + f[1]], r["mean_" + f[1]] = float(f[2]), float(f[3])
            r["cpu_" + f[1]] = float(f[4])
        elif f[0] == "per_frame_apply":
            r["apply_frames"] = [float(v) for v in f[1:]]
        elif f[0] in ("frames", "faces"):
            r[f[0]] = int(f[1])
        elif f[0] in ("loop_s", "loop_cpu_s", "fps"):
            r[f[0]] = float(f[1])
    return r


def med(v):
    v = sorted(x for x in v if x is not None)
    return float(np.median(v)) if v else float("nan")


def table(argv):
    if len(argv) != 2:
        sys.exit("usage: peer_opencv.py table RUNS_DIR PEER_FRAMES")
    d, nf = argv[0], int(argv[1])
    runs = {}
    for t in sorted(glob.glob(os.path.join(d, "r*_*.time"))):
        base = t[:-5]
        rnd, name = os.path.basename(base)[1:].split("_", 1)
        runs.setdefault(name, []).append(parse_run(base))
    n = len(runs["ff_default"])
    loads = [r["load"] for rs in runs.values() for r in rs]
    print(f"Rounds: {n}. 1-minute load average before the runs: median {med(loads):.1f}, "
          f"range {min(loads):.1f}-{max(loads):.1f} (2 cores).\n")

    def rng(v, fmt="{:.1f}"):
        return (fmt + " ({}-{})").format(med(v), fmt.format(min(v)), fmt.format(max(v)))

    print("End to end, `facefuse swap` (200 frames; fps = the JSON's, frames / the video "
          "job's wall time; process = frames / the whole process's wall time, model "
          "loading included; CPU = user + sys of the process per frame). Median (range) "
          "over the rounds:\n")
    print("| configuration | fps | process fps | CPU ms / frame | load before | "
          "others' CPU during (cores) |")
    print("|---|---:|---:|---:|---:|---:|")
    for key, label in FF_CONFIGS:
        rs = runs[key]
        print(f"| {label} | {rng([r['fps'] for r in rs])} | "
              f"{rng([r['frames'] / r['wall'] for r in rs])} | "
              f"{rng([r['cpu'] * 1e3 / r['frames'] for r in rs])} | "
              f"{med([r['load'] for r in rs]):.1f} | "
              f"{rng([r.get('others', float('nan')) for r in rs], '{:.2f}')} |")
    print("\nEach run of the defaults and of --preset ultrafast (fps against what the other "
          "tenants took):\n")
    print("| round | defaults fps | others (cores) | ultrafast fps | others (cores) |")
    print("|---|---:|---:|---:|---:|")
    for i, (a, b) in enumerate(zip(runs["ff_default"], runs["ff_ultrafast"])):
        print(f"| {i + 1} | {a['fps']:.1f} | {a.get('others', float('nan')):.2f} | "
              f"{b['fps']:.1f} | {b.get('others', float('nan')):.2f} |")

    print("\nPer stage, ms per frame, medians over the rounds. `facefuse swap` columns: the "
          "-v line's totals / frames (wall clock; the workers' stages are summed over the "
          "2 workers, decode and encode are the coordinating thread's share, x264's own "
          "threads not included). bench_swap: the same stages one after the other on one "
          "core, median over the frames (CPU time only for the top-level calls).\n")
    print("| stage | swap defaults | swap --threads 1 --model-threads 1, one core | "
          "bench_swap wall | bench_swap CPU | bench_swap mean wall |")
    print("|---|---:|---:|---:|---:|---:|")
    dv, d1, bs = runs["ff_default"], runs["ff_1core"], runs["drv_feather"]
    for st in STAGES:
        a = med([r.get("v_" + st) for r in dv]) if st not in ("apply", "total") else None
        b = med([r.get("v_" + st) for r in d1]) if st not in ("apply", "total") else None
        c = med([r["med_" + st] for r in bs])
        cc = med([r["cpu_" + st] for r in bs])
        m = med([r["mean_" + st] for r in bs])
        f = lambda x: "" if x is None or x != x else f"{x:.2f}"
        cpu = "" if cc < 0 else f"{cc:.2f}"
        print(f"| {st} | {f(a)} | {f(b)} | {c:.2f} | {cpu} | {m:.2f} |")
    print(f"\nbench_swap, one core, whole clip: {med([r['fps'] for r in bs]):.1f} frames/s "
          f"({med([r['loop_cpu_s'] * 1e3 / r['frames'] for r in bs]):.1f} ms CPU per frame, "
          "encoder flush included).")

    def apply_med(rs, k):
        return med([float(np.median(r["apply_frames"][:k])) for r in rs])

    cv1, cvd, dp = runs["cv_1core"], runs["cv_default"], runs["drv_poisson"]
    k = min(nf, min(len(r["apply_frames"]) for r in cv1 + cvd + dp))
    ours_f, ours_p = apply_med(bs, k), apply_med(dp, k)
    peer1, peerd = apply_med(cv1, k), apply_med(cvd, k)
    print(f"\nAgainst the classic OpenCV face swap, same landmarks, first {k} frames. "
          "Per-frame apply = facefuse's ffu_swapper_apply (warp, mask, colour, blend) / the "
          "peer's triangulate + per-triangle warp + seamlessClone; median over frames, then "
          "over rounds. End-to-end fps: facefuse swap over the 200 frames (detection and "
          "landmarks included) / the peer's decode-apply-encode loop (landmarks read from "
          "a file, so no detection or landmark model is run).\n")
    print("| measure | facefuse | OpenCV | OpenCV / facefuse (time) |")
    print("|---|---:|---:|---:|")
    rows = [
        ("apply ms, one core: feather (default) vs seamlessClone", ours_f, peer1, True),
        ("apply ms, one core: poisson vs seamlessClone", ours_p, peer1, True),
        ("apply ms, OpenCV default threads (facefuse apply is single-threaded): poisson",
         ours_p, peerd, True),
    ]
    for label, a, b, _ in rows:
        print(f"| {label} | {a:.2f} | {b:.2f} | {b / a:.1f}x |")
    e = [
        ("end-to-end fps, one core (facefuse --threads 1 --model-threads 1; "
         "cv2.setNumThreads(1)), defaults", med([r["fps"] for r in d1]),
         med([r["fps"] for r in cv1])),
        ("end-to-end fps, default threads, defaults", med([r["fps"] for r in dv]),
         med([r["fps"] for r in cvd])),
        ("end-to-end fps, default threads, facefuse --blend poisson",
         med([r["fps"] for r in runs["ff_poisson"]]), med([r["fps"] for r in cvd])),
    ]
    for label, a, b in e:
        print(f"| {label} | {a:.2f} | {b:.2f} | {a / b:.1f}x |")
    print("\nThe peer's stages (ms per frame, median over frames, then rounds):\n")
    print("| stage | OpenCV one core | OpenCV default threads |")
    print("|---|---:|---:|")
    for st in ["decode", "triangulate", "warp", "clone", "apply", "encode", "total"]:
        print(f"| {st} | {med([r['med_' + st] for r in cv1]):.2f} | "
              f"{med([r['med_' + st] for r in cvd]):.2f} |")
    print("\nbench_swap poisson, one core, same frames: blend "
          f"{med([r['med_blend'] for r in dp]):.2f} ms, colour "
          f"{med([r['med_colour'] for r in dp]):.2f} ms (median per frame).")


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "swap":
        swap(sys.argv[2:])
    elif len(sys.argv) >= 2 and sys.argv[1] == "table":
        table(sys.argv[2:])
    else:
        sys.exit("usage: peer_opencv.py swap|table ...")


if __name__ == "__main__":
    main()
