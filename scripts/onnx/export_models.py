#!/usr/bin/python3
"""Exports the ONNX test models for Weft's importer, with a seeded input and PyTorch's output.

Run with Debian's interpreter (torch 1.13, torchvision 0.14, onnx 1.12 live only there):

    /usr/bin/python3 scripts/onnx/export_models.py [--out build/models] [--models a,b] [--force] [--ops]

For each model NAME this writes, in the output directory:
    NAME.onnx        opset 17, constant-folded, static shapes, input "input" ("input_ids" for
                     bert_encoder), output "output"
    NAME.input.npy   the seeded random input (images ~N(0,1) float32 NCHW; token ids int64 in [0,1000))
    NAME.torch.npy   PyTorch's output for that input (float32)

Weights are random (torch.manual_seed(0) before building each model); nothing is downloaded.
A model whose three files already exist is skipped unless --force. With --batch B (not 1) the
input has batch B and the files are NAME.bB.onnx, NAME.bB.input.npy, NAME.bB.torch.npy.
"""

import argparse
import collections
import math
import os
import sys
import time
import warnings

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OPSET = 17
DEFAULT_OPSET = OPSET
IMAGE_SHAPE = (1, 3, 224, 224)

# name -> (input name, kind). The importer tests and compare_models.py read this table.
MODELS = {
    "mobilenet_v2": ("input", "image"),
    "resnet18": ("input", "image"),
    "resnet50": ("input", "image"),
    "squeezenet1_1": ("input", "image"),
    "efficientnet_b0": ("input", "image"),
    "vit_b_16": ("input", "image"),
    "bert_encoder": ("input_ids", "tokens"),
}
# The models above are the test set ("all"). The broad set ("broad") adds torchvision models the
# tests never see, for bench/onnx_models.py: exported only when asked for by name or as "broad".
BROAD = ["resnext50_32x4d", "regnet_y_400mf", "shufflenet_v2_x1_0", "mobilenet_v3_large", "mnasnet1_0",
         "convnext_tiny", "densenet121", "googlenet", "wide_resnet50_2", "vgg11_bn", "alexnet", "swin_t",
         "inception_v3", "efficientnet_v2_s", "maxvit_t", "regnet_x_400mf", "mobilenet_v3_small"]
# swin_v2_t is not in the broad set: torch 1.13 cannot export it (aten::zero has no ONNX form at
# opset 17). A newer torch can: it is exported when asked for by name.
# inception_v3 takes its own input size, 299 x 299 (kind "image299").
# Video models (input [1, 3, 16, 112, 112], 3-D convolutions) and torch.nn sequence models
# (input [1, 32, 64] float): exported when asked for by name, as "video" or as "seq".
VIDEO = ["r3d_18", "mc3_18", "r2plus1d_18"]
SEQ = ["lstm", "gru", "transformer_encoder", "mha"]
# A small torchvision VisionTransformer (64x64 input, 2 layers): ViT-B/16's graph at a size that
# travels (e.g. exported by a newer torch elsewhere and brought back).
SMALL_IMAGE = ["vit_tiny"]
# torchvision's segmentation models (input [1, 3, 224, 224]; the "out" head): as "seg".
SEG = ["fcn_resnet50", "deeplabv3_resnet50", "deeplabv3_mobilenet_v3_large", "lraspp_mobilenet_v3_large"]
# Hand-written blocks (input [1, 128, 256]): the common norms, activations and attention written
# out in elementary operators, as models in the wild write them rather than as PyTorch's own
# modules export (LayerNorm by mean / variance / sqrt / division, RMS norm, GELU's tanh form, SiLU
# as x * sigmoid(x), hard-swish as x * relu6(x + 3) / 6, softmax as exp / sum, attention as
# matmuls around a hand-built softmax; attention_causal adds a decoder's causal mask, 0 / -inf
# above the diagonal, to the scores; GELU as HF BERT writes it, x * 0.5 * (1 + erf(x / sqrt 2));
# a layer norm through torch.var, which computes the mean again; CLIP's quick GELU,
# x * sigmoid(1.702 x); GELU's tanh form with the constant first, 0.044715 * x * x * x, and factored as
# BLOOM writes it; Mish written x * tanh(softplus(x)); a log-softmax written
# x - max - log(sum(exp(x - max)))): as "patterns".
PATTERNS = ["layernorm_manual", "rmsnorm", "gelu_tanh", "silu_manual", "hardswish_manual", "softmax_manual",
            "attention_manual", "attention_causal", "gelu_erf_manual", "layernorm_var", "quick_gelu",
            "gelu_tanh_cube", "gelu_tanh_factored", "mish_manual", "logsoftmax_manual"]
PATTERN_SHAPE = (1, 128, 256)
SMALL_IMAGE_SHAPE = (1, 3, 64, 64)
VIDEO_SHAPE = (1, 3, 16, 112, 112)
SEQ_SHAPE = (1, 32, 64)
TEST_MODELS = list(MODELS)
# bert_encoder with BERT's padding mask (token id 0 is padding; the input pads each sequence's end):
# exported when asked for by name.
MODELS["bert_masked"] = ("input_ids", "tokens")
for _names, _kind in ((BROAD, "image"), (VIDEO, "video"), (SEQ, "seq"), (SMALL_IMAGE, "image64"), (SEG, "image"),
                      (PATTERNS, "pattern")):
    for _name in _names:
        MODELS[_name] = ("input", _kind)
MODELS["inception_v3"] = ("input", "image299")
MODELS["swin_v2_t"] = ("input", "image")
# Which torch.onnx exporter: "torchscript" (the only one in Debian's torch 1.13) or "dynamo" (torch
# 2.5+, the default from 2.9). Set by --exporter.
EXPORTER = "torchscript"
FLOAT64_REFERENCE = False  # --float64-reference
OUTPUT_NAME = "output"

# bert_encoder's configuration.
BERT_VOCAB = 1000
BERT_SEQ = 128
BERT_HIDDEN = 256
BERT_LAYERS = 4
BERT_HEADS = 4
BERT_FFN = 1024


def model_files(out_dir, name, batch=1, half=False):
    """The files of NAME exported at `batch` (NAME.* at batch 1, NAME.bB.* otherwise; with `half`,
    the model exported in half precision: NAME[.bB].fp16.*)."""
    base = os.path.join(out_dir, name if batch == 1 else "%s.b%d" % (name, batch))
    if half:
        base += ".fp16"
    return {"onnx": base + ".onnx", "input": base + ".input.npy", "torch": base + ".torch.npy"}


def parse_model_list(text):
    """'a,b' -> ['a', 'b'] in the given order; '' / 'all' / None -> the test set; 'broad' -> the
    test set (but vit_b_16) and the broad set."""
    if not text or text == "all":
        return list(TEST_MODELS)
    names = []
    for n in (n.strip() for n in text.split(",")):
        if n == "broad":
            names += [m for m in TEST_MODELS + BROAD if m not in ("vit_b_16",) and m not in names]
        elif n in ("video", "seq", "small"):
            names += [m for m in {"video": VIDEO, "seq": SEQ, "small": SEQ + SMALL_IMAGE}[n] if m not in names]
        elif n == "seg":
            names += [m for m in SEG if m not in names]
        elif n == "patterns":
            names += [m for m in PATTERNS if m not in names]
        elif n and n not in names:
            names.append(n)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        raise SystemExit("unknown model(s): %s (known: %s)" % (", ".join(unknown), ", ".join(MODELS)))
    return names


# --------------------------------------------------------------------------------------------
# bert_encoder: a small BERT-style encoder (post-LayerNorm, as BERT), written with explicit
# matmul/softmax so that the exported graph is plain MatMul/Add/Softmax/Reshape/Transpose.
# No attention mask: every one of the 128 tokens attends to all others. bert_masked (masked=True)
# adds BERT's additive padding mask, (1 - (input_ids != 0)) * -10000 as [B, 1, 1, S], to the scores.
# --------------------------------------------------------------------------------------------


def build_bert(masked=False):
    import torch
    from torch import nn

    class SelfAttention(nn.Module):
        def __init__(self, hidden, heads):
            super().__init__()
            self.heads = heads
            self.head_dim = hidden // heads
            self.query = nn.Linear(hidden, hidden)
            self.key = nn.Linear(hidden, hidden)
            self.value = nn.Linear(hidden, hidden)
            self.out = nn.Linear(hidden, hidden)

        def split(self, x):  # [B, S, H] -> [B, heads, S, head_dim]
            b, s, _ = x.shape
            return x.reshape(b, s, self.heads, self.head_dim).transpose(1, 2)

        def forward(self, x, mask=None):
            b, s, h = x.shape
            q = self.split(self.query(x))
            k = self.split(self.key(x))
            v = self.split(self.value(x))
            scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(self.head_dim))
            if mask is not None:
                scores = scores + mask
            probs = torch.softmax(scores, dim=-1)
            ctx = torch.matmul(probs, v)  # [B, heads, S, head_dim]
            ctx = ctx.transpose(1, 2).reshape(b, s, h)
            return self.out(ctx)

    class Layer(nn.Module):
        def __init__(self, hidden, heads, ffn):
            super().__init__()
            self.attention = SelfAttention(hidden, heads)
            self.attention_norm = nn.LayerNorm(hidden, eps=1e-12)
            self.ffn_in = nn.Linear(hidden, ffn)
            self.act = nn.GELU()  # exact (erf) GELU, as BERT
            self.ffn_out = nn.Linear(ffn, hidden)
            self.ffn_norm = nn.LayerNorm(hidden, eps=1e-12)

        def forward(self, x, mask=None):
            x = self.attention_norm(x + self.attention(x, mask))
            return self.ffn_norm(x + self.ffn_out(self.act(self.ffn_in(x))))

    class BertEncoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.word_embeddings = nn.Embedding(BERT_VOCAB, BERT_HIDDEN)
            self.position_embeddings = nn.Embedding(BERT_SEQ, BERT_HIDDEN)
            self.embedding_norm = nn.LayerNorm(BERT_HIDDEN, eps=1e-12)
            self.layers = nn.ModuleList(Layer(BERT_HIDDEN, BERT_HEADS, BERT_FFN) for _ in range(BERT_LAYERS))
            # BERT's initialisation: N(0, 0.02) weights, zero biases, LayerNorm (1, 0).
            for m in self.modules():
                if isinstance(m, (nn.Linear, nn.Embedding)):
                    nn.init.normal_(m.weight, std=0.02)
                if isinstance(m, nn.Linear):
                    nn.init.zeros_(m.bias)

        def forward(self, input_ids):
            # Position ids as a constant slice of the table (static shape: the whole table).
            x = self.word_embeddings(input_ids) + self.position_embeddings.weight[: input_ids.shape[1]].unsqueeze(0)
            x = self.embedding_norm(x)
            mask = None
            if masked:
                keep = (input_ids != 0).to(x.dtype)[:, None, None, :]
                mask = (1.0 - keep) * -10000.0
            for layer in self.layers:
                x = layer(x, mask)
            return x

    return BertEncoder()


def build_seq(name):
    """torch.nn sequence models over [1, 32, 64]: a 2-layer bidirectional LSTM, a 2-layer GRU, and
    a 2-layer Transformer encoder (4 heads, GELU), each followed by a Linear head."""
    from torch import nn

    class Seq(nn.Module):
        def __init__(self):
            super().__init__()
            if name == "lstm":
                self.body = nn.LSTM(64, 48, num_layers=2, batch_first=True, bidirectional=True)
                width = 96
            elif name == "gru":
                self.body = nn.GRU(64, 64, num_layers=2, batch_first=True)
                width = 64
            elif name == "mha":
                self.body = nn.MultiheadAttention(64, 4, batch_first=True)
                width = 64
            else:
                layer = nn.TransformerEncoderLayer(64, 4, dim_feedforward=128, dropout=0.0, activation="gelu",
                                                   batch_first=True)
                self.body = nn.TransformerEncoder(layer, num_layers=2)
                width = 64
            self.head = nn.Linear(width, 10)

        def forward(self, x):
            y = self.body(x, x, x, need_weights=False) if name == "mha" else self.body(x)
            return self.head(y[0] if isinstance(y, tuple) else y)

    return Seq()


def build_pattern(name):
    """Four residual blocks of Linear(256, 256) followed by the hand-written pattern `name`."""
    import torch
    from torch import nn

    width = PATTERN_SHAPE[2]

    def layernorm(x, w, b):
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + 1e-5) * w + b

    def rmsnorm(x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w

    def gelu_tanh(x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3))))

    def softmax(x):
        e = torch.exp(x - x.max(-1, keepdim=True).values)
        return e / e.sum(-1, keepdim=True)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(width, width)
            self.w = nn.Parameter(1.0 + 0.1 * torch.randn(width))
            self.b = nn.Parameter(0.1 * torch.randn(width))
            if name in ("attention_manual", "attention_causal"):
                self.qkv = nn.Linear(width, 3 * width)
                self.heads = 4
            if name == "attention_causal":
                s = PATTERN_SHAPE[1]
                self.register_buffer("causal", torch.full((s, s), float("-inf")).triu(1)[None, None])

        def forward(self, x):
            if name in ("attention_manual", "attention_causal"):
                n, s, d = x.shape
                q, k, v = self.qkv(x).split(d, dim=-1)
                shape = (n, s, self.heads, d // self.heads)
                q, k, v = (t.reshape(shape).transpose(1, 2) for t in (q, k, v))
                scores = q @ k.transpose(-1, -2) / math.sqrt(d // self.heads)
                if name == "attention_causal":
                    a = torch.softmax(scores + self.causal, dim=-1)
                else:
                    a = softmax(scores)
                y = (a @ v).transpose(1, 2).reshape(n, s, d)
                return layernorm(x + self.fc(y), self.w, self.b)
            h = self.fc(x)
            if name == "layernorm_manual":
                h = layernorm(h, self.w, self.b)
            elif name == "rmsnorm":
                h = rmsnorm(h, self.w)
            elif name == "gelu_tanh":
                h = gelu_tanh(h)
            elif name == "silu_manual":
                h = h * torch.sigmoid(h)
            elif name == "hardswish_manual":
                h = h * torch.clamp(h + 3.0, 0.0, 6.0) / 6.0
            elif name == "softmax_manual":
                h = softmax(h)
            elif name == "gelu_erf_manual":
                h = h * 0.5 * (1.0 + torch.erf(h / math.sqrt(2.0)))
            elif name == "quick_gelu":
                h = h * torch.sigmoid(1.702 * h)
            elif name == "gelu_tanh_cube":
                h = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * h * h * h)))
            elif name == "gelu_tanh_factored":
                h = h * 0.5 * (1.0 + torch.tanh(0.79788456 * h * (1 + 0.044715 * h * h)))
            elif name == "mish_manual":
                h = h * torch.tanh(nn.functional.softplus(h))
            elif name == "logsoftmax_manual":
                m = h.max(-1, keepdim=True).values
                h = h - m - torch.log(torch.exp(h - m).sum(-1, keepdim=True))
            elif name == "layernorm_var":
                mean = h.mean(-1, keepdim=True)
                h = (h - mean) / torch.sqrt(h.var(-1, unbiased=False, keepdim=True) + 1e-5) * self.w + self.b
            return x + h

    return nn.Sequential(*[Block() for _ in range(4)])


def input_shape(name):
    kind = MODELS[name][1]
    return {"video": VIDEO_SHAPE, "seq": SEQ_SHAPE, "image64": SMALL_IMAGE_SHAPE, "image299": (1, 3, 299, 299),
            "pattern": PATTERN_SHAPE}.get(kind, IMAGE_SHAPE)


def calibrate_batchnorm(model, batches=2, batch_size=8, shape=IMAGE_SHAPE):
    """Sets every BatchNorm's running mean/var to the statistics of seeded N(0,1) images.

    torchvision's initialisation leaves eval-mode BatchNorm as the identity (mean 0, var 1).
    With depthwise convolutions that is degenerate: kaiming_normal_(mode="fan_out") computes
    fan_out of a [C,1,k,k] depthwise weight as C*k*k instead of k*k, so every depthwise layer
    shrinks the signal by ~C and the random mobilenet_v2 / efficientnet_b0 produce outputs of
    ~1e-9 / ~1e-14, where any comparison passes. Measuring the statistics, as training would,
    keeps every layer at unit scale; the weights themselves stay random (seeded). Only the
    BatchNorm modules run in training mode here (dropout / stochastic depth stay off).
    """
    import torch
    from torch import nn

    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    gen = torch.Generator().manual_seed(1)
    model.eval()
    saved = []
    for m in bns:
        saved.append(m.momentum)
        m.reset_running_stats()
        m.momentum = None  # cumulative average over the calibration batches
        m.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.randn((batch_size,) + shape[1:], generator=gen))
    for m, momentum in zip(bns, saved):
        m.momentum = momentum
    model.eval()


def build_model(name):
    import torch
    import torchvision
    from torch import nn

    torch.manual_seed(0)
    if name in ("bert_encoder", "bert_masked"):
        model = build_bert(masked=name == "bert_masked")
    elif name in SEQ:
        model = build_seq(name)
    elif name in PATTERNS:
        model = build_pattern(name)
    elif name in VIDEO:
        model = getattr(torchvision.models.video, name)(weights=None)
    elif name in SEG:
        class Segmentation(nn.Module):
            def __init__(self, net):
                super().__init__()
                self.net = net

            def forward(self, x):
                return self.net(x)["out"]

        model = Segmentation(getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None,
                                                                            aux_loss=None))
    elif name == "vit_tiny":
        from torchvision.models.vision_transformer import VisionTransformer
        model = VisionTransformer(image_size=64, patch_size=16, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128,
                                  num_classes=10)
        nn.init.normal_(model.heads.head.weight, std=0.02)
    else:
        model = getattr(torchvision.models, name)(weights=None)
    if name == "vit_b_16":
        # torchvision zero-initialises the classification head, which makes the random model's
        # output identically 0; give it N(0, 0.02) weights (the rest is torchvision's init).
        nn.init.normal_(model.heads.head.weight, std=0.02)
    calibrate_batchnorm(model, batch_size=2 if name in VIDEO else 8, shape=input_shape(name))
    model.eval()
    return model


def make_input(name, batch=1):
    rng = np.random.default_rng(0)
    if MODELS[name][1] == "tokens":
        ids = rng.integers(0, BERT_VOCAB, size=(batch, BERT_SEQ), dtype=np.int64)
        if name == "bert_masked":  # sequences of different lengths, padded with id 0
            ids[ids == 0] = 1
            for i in range(batch):
                ids[i, BERT_SEQ - (17 * i + 9) % (BERT_SEQ // 2):] = 0
        return ids
    return rng.standard_normal((batch,) + input_shape(name)[1:], dtype=np.float32)


def export_one(name, out_dir, force=False, batch=1, half=False):
    import torch
    import onnx

    files = model_files(out_dir, name, batch, half)
    if not force and all(os.path.exists(p) for p in files.values()):
        print("%-16s exists, skipped (--force re-exports)" % name, flush=True)
        return "skipped"

    t0 = time.perf_counter()
    model = build_model(name)
    x = make_input(name, batch)
    xt = torch.from_numpy(x)
    with torch.no_grad():
        ref = model(xt).numpy().astype(np.float32)
    if half:
        # The same weights in half precision, as `model.half()` users export them (fp16 inputs,
        # weights and output; traced on the GPU where there is one, since not every fp16 operator
        # runs on the CPU). The reference stays the fp32 model's output: the error of the fp16
        # model against it is what the precision costs.
        dev = "cuda" if torch.cuda.is_available() else "cpu"
        model = model.half().to(dev)
        if x.dtype == np.float32:
            x = x.astype(np.float16)
        xt = torch.from_numpy(x).to(dev)

    input_name = MODELS[name][0]
    tmp = files["onnx"] + ".tmp"
    # Exported with grad enabled, on purpose (matters for vit_b_16): in eval mode under no_grad,
    # torch 1.13's nn.MultiheadAttention takes its fused inference path,
    # torch._native_multi_head_attention, which the ONNX exporter cannot export
    # ("UnsupportedOperatorError: aten::_native_multi_head_attention ... opset version 17").
    # The fast path is skipped when grad is enabled and a parameter requires grad, so the tracer
    # records the ordinary Python path (in_proj MatMul, scaled Q.K^T, Softmax, out_proj): the
    # same function with the same weights. Other models trace the same graph either way.
    # Newer torch (2.5+) also has a dynamo-based exporter, the default from 2.9; the TorchScript one
    # (what Debian's torch 1.13 has) gives the same graphs on every version, so ask for it.
    import inspect
    has_dynamo = "dynamo" in inspect.signature(torch.onnx.export).parameters
    if EXPORTER == "dynamo":
        if not has_dynamo:
            raise SystemExit("--exporter dynamo needs torch 2.5 or newer (this is torch %s)" % torch.__version__)
        # The dynamo-based exporter (torch.export + onnxscript), as newer torch uses by default.
        opset = {"opset_version": OPSET} if OPSET else {}  # --opset 0: the exporter's own default
        torch.onnx.export(model, (xt,), tmp, dynamo=True, input_names=[input_name], output_names=[OUTPUT_NAME],
                          external_data=False, **opset)
    else:
        extra = {"dynamo": False} if has_dynamo else {}
        with torch.enable_grad():
            torch.onnx.export(
                model,
                (xt,),
                tmp,
                export_params=True,
                opset_version=OPSET,
                do_constant_folding=True,
                input_names=[input_name],
                output_names=[OUTPUT_NAME],
                dynamic_axes=None,
                **extra,
            )
    onnx.checker.check_model(tmp)
    check_static(tmp, name)
    os.replace(tmp, files["onnx"])
    np.save(files["input"], x)
    np.save(files["torch"], ref)
    if FLOAT64_REFERENCE:
        # The same weights and input in float64: a reference closer to the exact result than any
        # float32 runtime, to tell rounding differences between two of them apart from errors.
        with torch.no_grad():
            ref64 = model.double()(torch.from_numpy(x).double()).numpy()
        np.save(files["onnx"][:-len(".onnx")] + ".torch64.npy", ref64)
    dt = time.perf_counter() - t0
    size_mb = os.path.getsize(files["onnx"]) / 1e6
    scale = float(np.abs(ref).max())
    print("%-16s exported in %6.1f s  %8.1f MB  output %s max|y| %.3g" % (name, dt, size_mb, list(ref.shape), scale),
          flush=True)
    if not scale > 1e-3:
        print("%-16s WARNING: output is (nearly) zero; comparisons on it prove little" % name, flush=True)
    return "exported"


def check_static(path, name):
    import onnx

    m = onnx.load(path, load_external_data=False)
    # Outputs may stay symbolic where torch's exporter infers no shape (swin_t's shifted windows):
    # the importer infers them from the static inputs.
    for kind, values in (("input", m.graph.input),):
        for v in values:
            if any(not d.HasField("dim_value") for d in v.type.tensor_type.shape.dim):
                raise RuntimeError("%s: %s '%s' has a non-static shape" % (name, kind, v.name))


def op_counts(path):
    import onnx

    m = onnx.load(path, load_external_data=False)
    counts = collections.Counter()

    def walk(graph):
        for node in graph.node:
            counts[(node.domain or "") + ("::" if node.domain else "") + node.op_type] += 1
            for attr in node.attribute:
                if attr.g is not None and attr.HasField("g"):
                    walk(attr.g)
                for g in attr.graphs:
                    walk(g)

    walk(m.graph)
    return counts


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(REPO, "build", "models"),
                    help="output directory (default <repo>/build/models)")
    ap.add_argument("--models", default="all", help="comma-separated subset of: " + ",".join(MODELS))
    ap.add_argument("--force", action="store_true", help="re-export models that already exist")
    ap.add_argument("--opset", type=int, default=DEFAULT_OPSET,
                    help="ONNX opset to export (default %d; 0 with --exporter dynamo: the exporter's default)" % DEFAULT_OPSET)
    ap.add_argument("--float64-reference", action="store_true",
                    help="also write NAME.torch64.npy, the model's output computed in float64")
    ap.add_argument("--exporter", choices=["torchscript", "dynamo"], default="torchscript",
                    help="torch.onnx exporter (dynamo: torch 2.5+; the default of torch 2.9+)")
    ap.add_argument("--ops", action="store_true", help="also print each model's ONNX op types and counts")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch's default)")
    ap.add_argument("--batch", type=int, default=1,
                    help="batch size of the exported input (files NAME.bB.* when not 1; default 1)")
    ap.add_argument("--half", action="store_true",
                    help="export the model in half precision (model.half(), fp16 input; files NAME[.bB].fp16.*; "
                         "NAME.fp16.torch.npy is the fp32 model's output); traced on CUDA when torch has it")
    args = ap.parse_args(argv)
    global EXPORTER, OPSET, FLOAT64_REFERENCE
    EXPORTER = args.exporter
    FLOAT64_REFERENCE = args.float64_reference
    OPSET = args.opset

    names = parse_model_list(args.models)
    os.makedirs(args.out, exist_ok=True)

    import torch

    # Shapes are static by design; the tracer's warnings about Python values baked into the
    # trace (e.g. vit_b_16's image-size assert) are expected and only noise here.
    warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
    if args.threads > 0:
        torch.set_num_threads(args.threads)

    failed = []
    for name in names:
        try:
            export_one(name, args.out, args.force, args.batch, args.half)
        except Exception as e:  # report and go on with the other models
            print("%-16s FAILED: %s: %s" % (name, type(e).__name__, e), file=sys.stderr, flush=True)
            failed.append(name)
            continue
        if args.ops:
            counts = op_counts(model_files(args.out, name, args.batch, args.half)["onnx"])
            print("    ops: " + ", ".join("%s x%d" % (k, v) for k, v in sorted(counts.items())), flush=True)
    if failed:
        print("export failed for: " + ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
