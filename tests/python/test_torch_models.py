"""torch.nn modules through torch's ONNX exporter into Weft, against torch itself: the recurrent
layers (LSTM, GRU, RNN; one layer, and two bidirectional batch-first layers) and a Transformer
encoder layer. Skips where torch is missing."""
import pytest

torch = pytest.importorskip("torch")
import weft.torch as wt  # noqa: E402


class Recurrent(torch.nn.Module):
    def __init__(self, kind, **kw):
        super().__init__()
        self.r = getattr(torch.nn, kind)(8, 16, **kw)

    def forward(self, x):
        y, h = self.r(x)
        return (y,) + (tuple(h) if isinstance(h, tuple) else (h,))


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("options", [{}, {"num_layers": 2, "bidirectional": True, "batch_first": True}],
                         ids=["one_layer", "two_bidirectional_batch_first"])
def test_recurrent_layers_match_torch(kind, options):
    torch.manual_seed(0)
    m = Recurrent(kind, **options).eval()
    x = torch.randn(3, 5, 8)
    compiled = wt.compile(m, x)
    got = compiled(x)
    with torch.no_grad():
        want = m(x)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, atol=1e-5, rtol=1e-5)


def test_transformer_encoder_layer_matches_torch():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True)
    m = torch.nn.TransformerEncoder(layer, num_layers=2).eval()
    x = torch.randn(2, 10, 32)
    with torch.no_grad():
        want = m(x)
    compiled = wt.compile(m, x)
    torch.testing.assert_close(compiled(x), want, atol=1e-4, rtol=1e-4)


class GridSample(torch.nn.Module):
    def __init__(self, mode, padding, align):
        super().__init__()
        self.args = dict(mode=mode, padding_mode=padding, align_corners=align)

    def forward(self, x, grid):
        return torch.nn.functional.grid_sample(x, grid, **self.args)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_matches_torch(mode, padding, align):
    # Sampling points reach 1.5x beyond the image on every side, so each padding rule is exercised.
    torch.manual_seed(1)
    x = torch.randn(2, 3, 5, 7)
    grid = torch.rand(2, 4, 6, 2) * 3 - 1.5
    compiled = wt.compile(GridSample(mode, padding, align).eval(), (x, grid))
    with torch.no_grad():
        want = GridSample(mode, padding, align)(x, grid)
    torch.testing.assert_close(compiled(x, grid), want, atol=1e-5, rtol=1e-5)



class PoolIndices(torch.nn.Module):
    """MaxPool2d with indices (ceil_mode, padding): torch exports MaxPool with its Indices output."""

    def __init__(self):
        super().__init__()
        self.pool = torch.nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True, return_indices=True)

    def forward(self, x):
        return self.pool(x)


def test_max_pool_indices_match_torch():
    # torch 1.13 cannot export MaxUnpool2d ("aten::max_unpool2d ... not supported"); MaxUnpool is
    # checked by ONNX's node tests (test_maxunpool_*).
    torch.manual_seed(2)
    x = torch.randn(2, 3, 7, 9)
    compiled = wt.compile(PoolIndices().eval(), x)
    got = compiled(x)
    with torch.no_grad():
        want = PoolIndices()(x)
    torch.testing.assert_close(got[0], want[0])
    assert got[1].to(torch.int64).tolist() == want[1].tolist()


class Einsum(torch.nn.Module):
    def __init__(self, eq):
        super().__init__()
        self.eq = eq

    def forward(self, *xs):
        return torch.einsum(self.eq, *xs)


@pytest.mark.parametrize("eq,shapes", [
    ("bhqd,bhkd->bhqk", [(2, 3, 5, 4), (2, 3, 6, 4)]),       # attention scores
    ("ii->i", [(4, 4)]),                                      # diagonal
    ("ii", [(4, 4)]),                                         # trace (implicit output)
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),               # a chain of three
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),        # broadcast ellipsis
    ("bij,j->bi", [(3, 4, 5), (5,)]),
    ("ijk->kj", [(2, 3, 4)]),                                 # a sum and a transpose
])
def test_einsum_matches_torch(eq, shapes):
    torch.manual_seed(3)
    xs = tuple(torch.randn(s) for s in shapes)
    compiled = wt.compile(Einsum(eq).eval(), xs)
    want = torch.einsum(eq, *xs)
    torch.testing.assert_close(compiled(*xs), want, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dims,kw", [
    (3, dict(stride=2, padding=1, output_padding=1, groups=2)),
    (3, dict(stride=(1, 2, 2), padding=(0, 1, 2), dilation=2)),
    (2, dict(stride=2, padding=1, dilation=2, groups=2)),  # dilated: no TRANSPOSE_CONV2D form
    (1, dict(stride=3, padding=1, output_padding=2)),
])
def test_conv_transpose_matches_torch(dims, kw):
    torch.manual_seed(4)
    conv = getattr(torch.nn, "ConvTranspose%dd" % dims)(4, 6, 3, **kw).eval()
    x = torch.randn((1, 4) + (5, 6, 7)[:dims])
    compiled = wt.compile(conv, x)
    with torch.no_grad():
        want = conv(x)
    torch.testing.assert_close(compiled(x), want, atol=1e-5, rtol=1e-5)


class Det(torch.nn.Module):
    def forward(self, x):
        return torch.linalg.det(x)


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_det_matches_torch(n):
    torch.manual_seed(5)
    x = torch.randn(3, n, n)
    compiled = wt.compile(Det().eval(), x)
    torch.testing.assert_close(compiled(x), torch.linalg.det(x), atol=1e-4, rtol=1e-4)


class ScatterAdd(torch.nn.Module):
    def forward(self, x, idx, src):
        return x.scatter_add(1, idx, src)


def test_scatter_add_with_repeated_indices_matches_torch():
    # ScatterElements with reduction "add": repeated positions accumulate (TOSA SCATTER forbids them).
    torch.manual_seed(6)
    x = torch.randn(3, 5)
    idx = torch.tensor([[0, 0, 4, 1], [2, 2, 2, 2], [4, 3, 4, 0]])
    src = torch.randn(3, 4)
    compiled = wt.compile(ScatterAdd().eval(), (x, idx, src))
    torch.testing.assert_close(compiled(x, idx, src), ScatterAdd()(x, idx, src), atol=1e-6, rtol=1e-6)


class RoiAlign(torch.nn.Module):
    def __init__(self, aligned):
        super().__init__()
        self.aligned = aligned

    def forward(self, x, boxes):
        import torchvision
        return torchvision.ops.roi_align(x, boxes, output_size=(3, 4), spatial_scale=0.5, sampling_ratio=2,
                                         aligned=self.aligned)


# torchvision 0.14 exports roi_align without coordinate_transformation_mode, so at opset 17 the node
# means ONNX's default, half_pixel: aligned=True. (aligned=False, output_half_pixel, is checked by
# ONNX's node test test_roialign_aligned_false.)
@pytest.mark.parametrize("aligned", [True])
def test_roi_align_matches_torchvision(aligned):
    pytest.importorskip("torchvision")
    torch.manual_seed(7)
    x = torch.randn(2, 3, 10, 12)
    # [batch index, x1, y1, x2, y2] in input pixels (scale 0.5): inside, across the edge, tiny, outside.
    boxes = torch.tensor([[0, 2.0, 3.0, 15.0, 17.0], [1, -4.0, -2.0, 10.0, 9.0], [1, 5.0, 5.0, 5.5, 6.0],
                          [0, 20.0, 1.0, 30.0, 25.0]])
    compiled = wt.compile(RoiAlign(aligned).eval(), (x, boxes))
    torch.testing.assert_close(compiled(x, boxes), RoiAlign(aligned)(x, boxes), atol=1e-5, rtol=1e-5)
