#!/usr/bin/python3
# OpenCV's own FaceDetectorYN (Debian python3-opencv 4.6, which decodes the 2022mar
# YuNet format) on images made to the network's input size, for the facefuse yunet2022
# test (tests/unit/test_face_yunet2022.c) and by hand. Each IMAGE is scaled to fit W x H
# (INTER_AREA), centred on black -- what facefuse's letterbox would do, written as a PNG
# so that facefuse then reads exactly these pixels at scale 1 -- and detected with
# FaceDetectorYN.create(MODEL, "", (W, H), SCORE, NMS, 5000).
#
#   ref_yunet2022.py MODEL OUTDIR W H SCORE NMS IMAGE...
#
# Prints, per image: "img OUTDIR/K.png COUNT", then COUNT lines "face X Y W H SCORE".
import sys

import cv2
import numpy as np


def fit(img, w, h):
    ih, iw = img.shape[:2]
    s = min(w / iw, h / ih)
    nw, nh = max(1, round(iw * s)), max(1, round(ih * s))
    out = np.zeros((h, w, 3), np.uint8)
    x0, y0 = (w - nw) // 2, (h - nh) // 2
    out[y0:y0 + nh, x0:x0 + nw] = cv2.resize(img, (nw, nh), interpolation=cv2.INTER_AREA)
    return out


def main(argv):
    if len(argv) < 8:
        sys.exit("usage: ref_yunet2022.py MODEL OUTDIR W H SCORE NMS IMAGE...")
    model, outdir = argv[1], argv[2]
    w, h, score, nms = int(argv[3]), int(argv[4]), float(argv[5]), float(argv[6])
    cv2.setNumThreads(1)
    det = cv2.FaceDetectorYN.create(model, "", (w, h), score, nms, 5000)
    for k, p in enumerate(argv[7:]):
        img = cv2.imread(p, cv2.IMREAD_COLOR)
        if img is None:
            sys.exit(f"ref_yunet2022: cannot read {p}")
        img = fit(img, w, h)
        out = f"{outdir}/{k}.png"
        cv2.imwrite(out, img)
        det.setInputSize((w, h))
        _, faces = det.detect(img)
        faces = [] if faces is None else faces
        print(f"img {out} {len(faces)}")
        for f in faces:
            print("face %.3f %.3f %.3f %.3f %.5f" % (f[0], f[1], f[2], f[3], f[14]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
