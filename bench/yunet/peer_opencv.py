#!/usr/bin/python3
# YuNet detection benchmark, OpenCV side (Debian python3-opencv, run with /usr/bin/python3)
# and the helpers bench/yunet/run needs: writing the shared input images, and the table.
#
#   peer_opencv.py prep OUTDIR IMAGE...     640x640 letterboxed + original-size PNGs
#   peer_opencv.py opencv [--runs N] [--warmup N] MODEL IMAGE...       (2023mar)
#   peer_opencv.py facedetectoryn [--runs N] [--warmup N] MODEL IMAGE...  (2022mar)
#   peer_opencv.py table OURS.txt OPENCV.txt
#
# facedetectoryn: cv2.FaceDetectorYN itself, with the 2022mar model (the format
# Debian's OpenCV 4.6 decodes): create(MODEL, "", (w, h), 0.75, 0.3, 5000), then per
# image setInputSize(image size) and detect -- the net runs at each image's own size.
#
# opencv: the 2023mar model, which FaceDetectorYN 4.6 cannot load (12 outputs
# cls/obj/bbox/kps x strides 8/16/32 arrived with OpenCV 4.8). So this side does what
# FaceDetectorYN 4.8 does, with OpenCV's own parts: pad the image
# to a multiple of 32 (bottom/right), blobFromImage (B,G,R 0..255), Net.forward, the
# 2023mar decoding (vectorised numpy, well under a millisecond) and cv2.dnn.NMSBoxes
# (score 0.75, NMS IoU 0.3, top_k 5000). The net runs at the image's own size, as
# FaceDetectorYN.setInputSize(image size) makes it. One thread (cv2.setNumThreads(1)).
import sys
import time

import cv2
import numpy as np

SCORE, NMS, TOP_K = 0.75, 0.3, 5000


def prep(outdir, paths):
    """PNG copies (lossless, so both sides decode the same pixels) of each image at its
    own size and letterboxed into 640x640: scaled to fit, image top-left, zero padding
    right/bottom (what facefuse's letterbox does, so it sees scale 1 and no padding)."""
    for p in paths:
        img = cv2.imread(p, cv2.IMREAD_COLOR)
        if img is None:
            sys.exit(f"peer_opencv: cannot read {p}")
        stem = p.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        h, w = img.shape[:2]
        s = 640.0 / max(w, h)
        nw, nh = max(1, round(w * s)), max(1, round(h * s))
        box = np.zeros((640, 640, 3), np.uint8)
        box[:nh, :nw] = cv2.resize(img, (nw, nh), interpolation=cv2.INTER_AREA)
        cv2.imwrite(f"{outdir}/640_{stem}.png", box)
        cv2.imwrite(f"{outdir}/orig_{stem}.png", img)


def detect(net, img):
    h, w = img.shape[:2]
    pw, ph = (w + 31) // 32 * 32, (h + 31) // 32 * 32
    if (pw, ph) != (w, h):
        img = cv2.copyMakeBorder(img, 0, ph - h, 0, pw - w, cv2.BORDER_CONSTANT, value=0)
    net.setInput(cv2.dnn.blobFromImage(img))
    outs = dict(zip(net.getUnconnectedOutLayersNames(),
                    net.forward(net.getUnconnectedOutLayersNames())))
    boxes, scores = [], []
    for st in (8, 16, 32):
        cols, rows = pw // st, ph // st
        cls = np.clip(outs[f"cls_{st}"].reshape(-1), 0, 1)
        obj = np.clip(outs[f"obj_{st}"].reshape(-1), 0, 1)
        bb = outs[f"bbox_{st}"].reshape(-1, 4)
        r, c = np.divmod(np.arange(rows * cols), cols)
        cx, cy = (c + bb[:, 0]) * st, (r + bb[:, 1]) * st
        bw, bh = np.exp(bb[:, 2]) * st, np.exp(bb[:, 3]) * st
        boxes.append(np.stack([cx - bw / 2, cy - bh / 2, bw, bh], 1))
        scores.append(np.sqrt(cls * obj))
    boxes, scores = np.concatenate(boxes), np.concatenate(scores)
    keep = cv2.dnn.NMSBoxes(boxes.tolist(), scores.tolist(), SCORE, NMS, top_k=TOP_K)
    keep = np.array(keep, dtype=int).reshape(-1)
    return [(*boxes[i], scores[i]) for i in keep]


def bench(model, paths, runs, warmup):
    cv2.setNumThreads(1)
    net = cv2.dnn.readNet(model)
    for p in paths:
        img = cv2.imread(p, cv2.IMREAD_COLOR)
        t = []
        for i in range(warmup + runs):
            t0 = time.perf_counter()
            faces = detect(net, img)
            t1 = time.perf_counter()
            if i >= warmup:
                t.append((t1 - t0) * 1e3)
        faces.sort(key=lambda f: -f[4])
        print(f"img {p} {img.shape[1]} {img.shape[0]} {float(np.median(t)):.3f} {len(faces)}")
        for f in faces:
            print("face %.2f %.2f %.2f %.2f %.4f" % tuple(float(v) for v in f))
        sys.stdout.flush()


def bench_fdyn(model, paths, runs, warmup):
    """cv2.FaceDetectorYN (OpenCV 4.6, 2022mar model): the time of detect() alone, after
    setInputSize(image size) -- what a caller does per frame of a fixed-size stream."""
    cv2.setNumThreads(1)
    det = cv2.FaceDetectorYN.create(model, "", (320, 320), SCORE, NMS, TOP_K)
    for p in paths:
        img = cv2.imread(p, cv2.IMREAD_COLOR)
        det.setInputSize((img.shape[1], img.shape[0]))
        t = []
        for i in range(warmup + runs):
            t0 = time.perf_counter()
            _, faces = det.detect(img)
            t1 = time.perf_counter()
            if i >= warmup:
                t.append((t1 - t0) * 1e3)
        faces = [] if faces is None else sorted(faces.tolist(), key=lambda f: -f[14])
        print(f"img {p} {img.shape[1]} {img.shape[0]} {float(np.median(t)):.3f} {len(faces)}")
        for f in faces:
            print("face %.2f %.2f %.2f %.2f %.4f" % (f[0], f[1], f[2], f[3], f[14]))
        sys.stdout.flush()


def read(path):
    res, cur = {}, None
    for line in open(path):
        w = line.split()
        if w[0] == "img":
            cur = res[w[1]] = {"size": f"{w[2]}x{w[3]}", "ms": float(w[4]), "faces": []}
        elif w[0] == "face":
            cur["faces"].append([float(v) for v in w[1:5]])
    return res


def iou(a, b):
    ix = max(0.0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]))
    inter = ix * iy
    return inter / (a[2] * a[3] + b[2] * b[3] - inter)


def table(ours_path, cv_path):
    ours, cv = read(ours_path), read(cv_path)
    print("| image | size fed | facefuse ms | OpenCV ms | OpenCV / facefuse | faces facefuse "
          "| faces OpenCV | matched (IoU >= 0.9) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for p, o in ours.items():
        c = cv.get(p)
        if not c:
            continue
        used, matched = set(), 0
        for a in o["faces"]:
            best = max(((iou(a, b), j) for j, b in enumerate(c["faces"]) if j not in used),
                       default=(0, -1))
            if best[0] >= 0.9:
                used.add(best[1])
                matched += 1
        name = p.rsplit("/", 1)[-1]
        print(f"| {name} | {o['size']} | {o['ms']:.2f} | {c['ms']:.2f} | "
              f"{c['ms'] / o['ms']:.2f}x | {len(o['faces'])} | {len(c['faces'])} | {matched} |")


def main(argv):
    if len(argv) >= 3 and argv[1] == "prep":
        prep(argv[2], argv[3:])
    elif len(argv) == 4 and argv[1] == "table":
        table(argv[2], argv[3])
    elif len(argv) >= 4 and argv[1] in ("opencv", "facedetectoryn"):
        runs, warmup, rest = 30, 5, argv[2:]
        while rest and rest[0] in ("--runs", "--warmup"):
            if rest[0] == "--runs":
                runs = int(rest[1])
            else:
                warmup = int(rest[1])
            rest = rest[2:]
        (bench if argv[1] == "opencv" else bench_fdyn)(rest[0], rest[1:], runs, warmup)
    else:
        sys.exit(__doc__ if __doc__ else "usage: see the comment at the top of peer_opencv.py")


if __name__ == "__main__":
    main(sys.argv)
