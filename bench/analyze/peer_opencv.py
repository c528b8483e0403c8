#!/usr/bin/python3
# Video analytics benchmark, OpenCV side (Debian python3-opencv; run with /usr/bin/python3).
# The part of `facefuse analyze` that OpenCV can do on its own: decode an H.264 stream
# with cv2.VideoCapture (FFmpeg underneath), keep one frame in (fps / SAMPLE), and run a
# face detector on it: cv2.FaceDetectorYN with YuNet 2022mar (OpenCV 4.6 cannot load
# 2023mar) on the frame scaled to 640 px wide, one thread (cv2.setNumThreads(1)).
# Skipped frames are grab()bed (decoded, not converted), kept ones retrieve()d, which is
# what facefuse's stream layer does too. Prints one JSON line with CPU seconds per part.
#
#   peer_opencv.py MODEL VIDEO [SAMPLE_FPS]
import json
import sys
import time

import cv2


def main():
    model, video = sys.argv[1], sys.argv[2]
    sample = float(sys.argv[3]) if len(sys.argv) > 3 else 5.0
    cv2.setNumThreads(1)
    cap = cv2.VideoCapture(video, cv2.CAP_FFMPEG)
    if not cap.isOpened():
        sys.exit(f"peer_opencv: cannot open {video}")
    fps = cap.get(cv2.CAP_PROP_FPS) or 30.0
    w = int(cap.get(cv2.CAP_PROP_FRAME_WIDTH))
    h = int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT))
    dw, dh = 640, max(1, round(640 * h / w))
    det = cv2.FaceDetectorYN.create(model, "", (dw, dh), 0.6, 0.3, 5000)
    period = 1.0 / sample
    next_t = 0.0
    n = kept = faces = 0
    t_dec = t_conv = t_det = 0.0
    wall0 = time.perf_counter()
    while True:
        c0 = time.process_time()
        ok = cap.grab()
        t_dec += time.process_time() - c0
        if not ok:
            break
        t = n / fps
        n += 1
        if t + 0.25 / fps < next_t:
            continue
        next_t += period
        c0 = time.process_time()
        ok, frame = cap.retrieve()
        small = cv2.resize(frame, (dw, dh), interpolation=cv2.INTER_AREA)
        t_conv += time.process_time() - c0
        c0 = time.process_time()
        _, found = det.detect(small)
        t_det += time.process_time() - c0
        kept += 1
        faces += 0 if found is None else len(found)
    wall = time.perf_counter() - wall0
    print(json.dumps({"frames": n, "kept": kept, "faces": faces, "video_s": n / fps,
                      "wall_s": wall, "cpu_s": {"decode": t_dec, "convert": t_conv,
                                                "detect": t_det}}))


if __name__ == "__main__":
    main()
