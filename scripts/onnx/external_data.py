#!/usr/bin/python3
"""Rewrites an .onnx file with its large initializers in one external data file, as exporters do for
big models: `external_data.py model.onnx out_dir [--threshold 1024]`.

Works on the protobuf wire format (no onnx package needed): the main graph's initializers that hold
raw_data of `threshold` bytes or more get data_location EXTERNAL and location/offset/length entries,
their bytes appended to <name>.data. Offsets are aligned as ONNX Runtime's saver aligns them for
mmap: 4096 bytes for tensors of 1 MiB and more, 64 below.
"""
import argparse
import os
import sys


def varint(b, i):
    r = s = 0
    while True:
        c = b[i]
        i += 1
        r |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return r, i


def enc_varint(v):
    out = bytearray()
    while True:
        c = v & 0x7F
        v >>= 7
        if v:
            out.append(c | 0x80)
        else:
            out.append(c)
            return bytes(out)


def fields(b):
    """(field, wire type, raw bytes of the whole field, payload) for each field of a message."""
    i = 0
    while i < len(b):
        start = i
        tag, i = varint(b, i)
        f, w = tag >> 3, tag & 7
        payload = None
        if w == 0:
            _, i = varint(b, i)
        elif w == 1:
            i += 8
        elif w == 5:
            i += 4
        elif w == 2:
            n, i = varint(b, i)
            payload = b[i:i + n]
            i += n
        else:
            raise SystemExit("unsupported protobuf wire type %d (groups)" % w)
        yield f, w, b[start:i], payload


def length_field(f, payload):
    return enc_varint(f << 3 | 2) + enc_varint(len(payload)) + payload


def rewrite(src, out_dir, threshold):
    b = open(src, "rb").read()
    name = os.path.splitext(os.path.basename(src))[0]
    location = name + ".data"
    data = bytearray()

    def tensor(t):
        raw = None
        for f, w, whole, payload in fields(t):
            if f == 9 and w == 2:
                raw = payload
        if raw is None or len(raw) < threshold:
            return t
        align = 4096 if len(raw) >= 1 << 20 else 64
        data.extend(b"\0" * (-len(data) % align))
        offset = len(data)
        data.extend(raw)
        out = bytearray(b"".join(whole for f, w, whole, _ in fields(t) if not (f == 9 and w == 2)))
        for key, value in (("location", location), ("offset", str(offset)), ("length", str(len(raw)))):
            entry = length_field(1, key.encode()) + length_field(2, value.encode())
            out += length_field(13, entry)
        out += enc_varint(14 << 3 | 0) + enc_varint(1)  # data_location = EXTERNAL
        return bytes(out)

    def graph(g):
        return b"".join(length_field(5, tensor(p)) if f == 5 and w == 2 else whole for f, w, whole, p in fields(g))

    model = b"".join(length_field(7, graph(p)) if f == 7 and w == 2 else whole for f, w, whole, p in fields(b))
    os.makedirs(out_dir, exist_ok=True)
    dst = os.path.join(out_dir, name + ".onnx")
    with open(dst, "wb") as f:
        f.write(model)
    with open(os.path.join(out_dir, location), "wb") as f:
        f.write(data)
    return dst


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("out_dir")
    ap.add_argument("--threshold", type=int, default=1024)
    args = ap.parse_args()
    print(rewrite(args.model, args.out_dir, args.threshold))
    return 0


if __name__ == "__main__":
    sys.exit(main())
