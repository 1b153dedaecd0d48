#!/usr/bin/env python3
"""CuPy peers of devmat's image benchmarks: the cupyx.scipy.ndimage (and plain CuPy) equivalents of
the operations in bench_filter, bench_image_ops and bench_image_neigh, at 4096x4096, timed with
CUDA events (warm-up, then the median of --reps runs), written as Google Benchmark JSON whose
rows are named as ours (<op>/<dtype>/<shape>/cupy, counters "value" and "unit" as in
bench/support.hpp), so that scripts/bench_table.py pairs each with our "ours" row of the same
op/dtype/shape.

    python3 bench/cupy_peers.py --out OUT.json [--reps 50] [--warmup 5] [--filter REGEX] [--side 4096]

The mapping (borders as ours, which are OpenCV's):
  filter2d_KxK f32       ndimage.correlate(img, w, mode="nearest")          (ours: replicated borders)
  gaussian_blur f32      ndimage.gaussian_filter(sigma=2, truncate=3)       (13 taps, as ours)
  sobel f32              hypot(ndimage.sobel(axis 0), ndimage.sobel(axis 1)), mode "nearest"
  box_KxK u8             ndimage.uniform_filter(size=K, mode="mirror")      (OpenCV's BORDER_REFLECT_101)
  erode_/dilate_KxK      ndimage.grey_erosion / grey_dilation(size=(K, K), mode="nearest")
  median_KxK             ndimage.median_filter(size=K, mode="nearest")
  resize_linear/nearest  ndimage.zoom(order=1 / 0, mode="nearest", grid_mode=True) (pixel centres, as OpenCV)
  warp_affine_linear     ndimage.affine_transform(order=1, mode="constant") with the inverse of the
                         benchmark's rotation (30 degrees about the centre, scale 0.9)
  flip_horizontal        cupy.flip(img, 1).copy();  rotate90: cupy.rot90(img).copy()
  plain CuPy, no ndimage: split_channels_3 (three strided copies), rgb_to_gray (the luma formula
                         as array expressions), histogram_256 (bincount), threshold_trunc
                         (minimum), integral (two cumsums into int32, without the zero row/column)
No CuPy peer: canny, resize_area, rgb_to_hsv.

Each row's counter "max_diff_vs_cv2" is the largest difference from OpenCV (cv2) on a small
odd-sized image, where cv2 is importable: it shows the peer computes our operation (0 or 1 grey
level for u8, ~1e-6 for f32; resize and warps interpolate in other fixed point). Needs cupy; exits 3
with a note when it is missing.
"""
import argparse
import json
import math
import platform
import re
import sys
import time

try:
    import cupy as cp
    import cupyx.scipy.ndimage as ndi
except ImportError as e:  # pragma: no cover - the GPU machine has CuPy
    print(f"cupy_peers.py: CuPy is not importable ({e}); no CuPy rows", file=sys.stderr)
    sys.exit(3)
import numpy as np

try:
    import cv2
except ImportError:
    cv2 = None

MPIXPS = 3  # bench/support.hpp's Unit::kMpixps


def shape_of(r, c):
    return f"{r}x{c}"


def warp_inverse(side):
    """bench_image_ops' kWarp (x = column, y = row, source to output) as affine_transform's
    (matrix, offset): input (row, col) = matrix @ output (row, col) + offset."""
    a, s, c = math.radians(30.0), 0.9, side / 2.0
    al, be = s * math.cos(a), s * math.sin(a)
    m = np.array([[al, be], [-be, al]])
    t = np.array([(1 - al) * c - be * c, be * c + (1 - al) * c])
    minv = np.linalg.inv(m)
    p = np.array([[0, 1], [1, 0]])  # (x, y) <-> (row, col)
    matrix = p @ minv @ p
    offset = -(matrix @ (p @ t))
    return matrix, offset


def kernel_weights(k, seed):
    w = np.random.default_rng(seed).random((k, k), dtype=np.float32)
    return w / w.sum()


def build_ops(side):
    """[(op, dtype, shape, out_pixels, fn(x), input_name, cv2_check or None)]; fn takes the input
    array (device or, for the check, a small device copy) and returns the result."""
    ops = []
    sq = shape_of(side, side)
    px = float(side * side)

    def add(op, dtype, shape, pixels, fn, inp, check=None):
        ops.append((op, dtype, shape, pixels, fn, inp, check))

    rep = cv2.BORDER_REPLICATE if cv2 else None
    for k in (5, 15):
        w = kernel_weights(k, 7 + k)
        wd = cp.asarray(w)
        add(f"filter2d_{k}x{k}", "f32", sq, px, lambda x, wd=wd: ndi.correlate(x, wd, mode="nearest"), "f32",
            (lambda h, w=w: cv2.filter2D(h, -1, w, borderType=rep)) if cv2 else None)
    add("gaussian_blur", "f32", sq, px, lambda x: ndi.gaussian_filter(x, 2.0, mode="nearest", truncate=3.0), "f32",
        (lambda h: cv2.GaussianBlur(h, (13, 13), 2.0, sigmaY=2.0, borderType=rep)) if cv2 else None)
    add("sobel", "f32", sq, px,
        lambda x: cp.hypot(ndi.sobel(x, axis=0, mode="nearest"), ndi.sobel(x, axis=1, mode="nearest")), "f32",
        (lambda h: np.hypot(cv2.Sobel(h, -1, 1, 0, ksize=3, borderType=rep),
                            cv2.Sobel(h, -1, 0, 1, ksize=3, borderType=rep))) if cv2 else None)
    for k in (3, 5, 15):
        add(f"box_{k}x{k}", "u8", sq, px, lambda x, k=k: ndi.uniform_filter(x, size=k, mode="mirror"), "u8",
            (lambda h, k=k: cv2.blur(h, (k, k))) if cv2 else None)
    morph = [("dilate", "u8", k) for k in (3, 7, 15, 31)] + [("erode", "u8", k) for k in (3, 31)] + \
            [("erode", "f32", k) for k in (3, 15, 31)]
    for name, dt, k in morph:
        fn = ndi.grey_erosion if name == "erode" else ndi.grey_dilation
        cvf = (cv2.erode if name == "erode" else cv2.dilate) if cv2 else None
        add(f"{name}_{k}x{k}", dt, sq, px, lambda x, fn=fn, k=k: fn(x, size=(k, k), mode="nearest"), dt,
            (lambda h, cvf=cvf, k=k: cvf(h, np.ones((k, k), np.uint8))) if cv2 else None)
    for dt, ks in (("u8", (3, 5, 7)), ("f32", (3, 5))):
        for k in ks:
            add(f"median_{k}x{k}", dt, sq, px, lambda x, k=k: ndi.median_filter(x, size=k, mode="nearest"), dt,
                (lambda h, k=k: cv2.medianBlur(h, k)) if cv2 else None)
    for dt, order, name, sizes in (("u8", 1, "linear", (2048, 6000)), ("u8", 0, "nearest", (2048, 6000)),
                                   ("f32", 1, "linear", (2048, 6000))):
        for n in sizes:
            z = n / side
            interp = (cv2.INTER_LINEAR if order else cv2.INTER_NEAREST) if cv2 else None
            add(f"resize_{name}", dt, f"{sq}->{shape_of(n, n)}", float(n * n),
                lambda x, z=z, order=order: ndi.zoom(x, z, order=order, mode="nearest", grid_mode=True), dt,
                (lambda h, z=z, interp=interp: cv2.resize(
                    h, (round(h.shape[1] * z), round(h.shape[0] * z)), interpolation=interp)) if cv2 else None)
    for dt in ("u8", "f32"):
        matrix, offset = warp_inverse(side)
        add("warp_affine_linear", dt, sq, px,
            lambda x, matrix=matrix, offset=offset: ndi.affine_transform(
                x, cp.asarray(matrix), cp.asarray(offset), output_shape=x.shape, order=1, mode="constant", cval=0),
            dt, None)  # the check's small image would need its own warp: left out
        add("flip_horizontal", dt, sq, px, lambda x: cp.flip(x, 1).copy(), dt,
            (lambda h: cv2.flip(h, 1)) if cv2 else None)
        add("rotate90", dt, sq, px, lambda x: cp.rot90(x).copy(), dt,
            (lambda h: cv2.rotate(h, cv2.ROTATE_90_COUNTERCLOCKWISE)) if cv2 else None)
    # Plain CuPy (no ndimage).
    add("split_channels_3", "u8", sq, px,
        lambda x: [x.reshape(x.shape[0], -1, 3)[:, :, c].copy() for c in range(3)], "rgb",
        (lambda h: list(cv2.split(h.reshape(h.shape[0], -1, 3)))) if cv2 else None)
    add("rgb_to_gray", "u8", sq, px, rgb_to_gray, "planes",
        (lambda h: cv2.cvtColor(np.dstack(h), cv2.COLOR_RGB2GRAY)) if cv2 else None)
    add("histogram_256", "u8", sq, px, lambda x: cp.bincount(x.ravel(), minlength=256), "u8",
        (lambda h: cv2.calcHist([h], [0], None, [256], [0, 256]).ravel()) if cv2 else None)
    add("threshold_trunc", "u8", sq, px, lambda x: cp.minimum(x, np.uint8(128)), "u8",
        (lambda h: cv2.threshold(h, 128, 255, cv2.THRESH_TRUNC)[1]) if cv2 else None)
    add("integral", "u8", sq, px, lambda x: cp.cumsum(cp.cumsum(x, axis=0, dtype=cp.int32), axis=1), "u8",
        (lambda h: cv2.integral(h)[1:, 1:]) if cv2 else None)
    return ops


def rgb_to_gray(planes):
    r, g, b = planes
    return (0.299 * r + 0.587 * g + 0.114 * b + 0.5).astype(cp.uint8)


def make_inputs(side):
    rng = cp.random.default_rng(1234)
    u8 = rng.integers(0, 256, size=(side, side), dtype=cp.uint8)
    f32 = rng.random((side, side), dtype=cp.float32)
    rgb = rng.integers(0, 256, size=(side, side * 3), dtype=cp.uint8)
    planes = [cp.ascontiguousarray(rgb.reshape(side, side, 3)[:, :, c]) for c in range(3)]
    return {"u8": u8, "f32": f32, "rgb": rgb, "planes": planes}


def to_host(x):
    if isinstance(x, (list, tuple)):
        return [cp.asnumpy(v) for v in x]
    return cp.asnumpy(x)


def max_diff_vs_cv2(fn, check, small):
    got, want = to_host(fn(small["dev"])), check(small["host"])
    if isinstance(got, list):
        return max(float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) for a, b in zip(got, want))
    want = np.asarray(want)
    if got.shape != want.shape:
        return float("inf")
    return float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))


def small_inputs():
    rng = np.random.default_rng(99)
    r, c = 257, 263
    u8 = rng.integers(0, 256, size=(r, c), dtype=np.uint8)
    f32 = rng.random((r, c), dtype=np.float32)
    rgb = rng.integers(0, 256, size=(r, c * 3), dtype=np.uint8)
    planes = [np.ascontiguousarray(rgb.reshape(r, c, 3)[:, :, k]) for k in range(3)]
    host = {"u8": u8, "f32": f32, "rgb": rgb, "planes": planes}
    dev = {k: ([cp.asarray(p) for p in v] if isinstance(v, list) else cp.asarray(v)) for k, v in host.items()}
    return host, dev


def time_median_ms(fn, x, reps, warmup):
    for _ in range(warmup):
        fn(x)
    cp.cuda.get_current_stream().synchronize()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(reps):
        start.record()
        fn(x)
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    times.sort()
    return times[len(times) // 2], len(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="Google Benchmark JSON to write")
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--side", type=int, default=4096)
    ap.add_argument("--filter", default=".", help="regex on the row name")
    args = ap.parse_args()

    inputs = make_inputs(args.side)
    host_small, dev_small = small_inputs()
    rows = []
    for op, dtype, shape, pixels, fn, inp, check in build_ops(args.side):
        name = f"{op}/{dtype}/{shape}/cupy"
        if not re.search(args.filter, name):
            continue
        row = {"name": name + "/manual_time", "run_name": name, "run_type": "iteration", "repetitions": 1,
               "repetition_index": 0, "threads": 1, "time_unit": "ms", "unit": MPIXPS}
        try:
            if check is not None:
                row["max_diff_vs_cv2"] = max_diff_vs_cv2(fn, check, {"host": host_small[inp], "dev": dev_small[inp]})
            ms, n = time_median_ms(fn, inputs[inp], args.reps, args.warmup)
        except Exception as e:  # an operation this CuPy lacks: say so, keep going
            print(f"{name}: skipped ({type(e).__name__}: {e})", file=sys.stderr)
            continue
        row.update({"iterations": n, "real_time": ms, "cpu_time": ms, "value": pixels / (ms * 1e-3) / 1e6})
        rows.append(row)
        diff = f"  max_diff_vs_cv2 {row['max_diff_vs_cv2']:.3g}" if "max_diff_vs_cv2" in row else ""
        print(f"{name:<48} {ms:9.4f} ms {row['value']:12.1f} Mpix/s{diff}", flush=True)

    dev = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    context = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "executable": "bench/cupy_peers.py",
               "host_name": platform.node(), "cupy_version": cp.__version__,
               "device": dev["name"].decode() if isinstance(dev["name"], bytes) else str(dev["name"]),
               "timing": f"CUDA events, median of {args.reps} after {args.warmup} warm-up runs",
               "cv2_version": cv2.__version__ if cv2 else None}
    with open(args.out, "w") as f:
        json.dump({"context": context, "benchmarks": rows}, f, indent=1)
    print(f"wrote {len(rows)} rows to {args.out}")


if __name__ == "__main__":
    main()
